"""Every input checked before work starts (issue 51): a bad count, a missing tasks file, an unknown
``--set`` key or an adapter made for another model is one line on stderr naming the problem, a non-zero
exit and nothing written; no model loads and no stage starts. Also the small things: strict JSON,
``--help`` text, ``--version``, and error lines without Python class names."""

from __future__ import annotations

import argparse
import json

import pytest

import toolkit
from toolkit.cli import build_parser, main
from toolkit.paths import REPO_ROOT
from toolkit.records import CallRecord, Trajectory, read_jsonl, write_jsonl

TASKS = REPO_ROOT / "tests" / "data" / "train_tasks.jsonl"
SHIPPED_ADAPTER = REPO_ROOT / "data" / "adapters" / "cpu-learn" / "grpo"  # made for smollm2-135m


def one_error_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


# ---- counts ------------------------------------------------------------------------------------------

BAD_COUNTS = [
    (["synth", "--out", "OUT", "--n", "-5"], "--n"),
    (["synth", "--out", "OUT", "--n", "0"], "--n"),
    (["synth", "--out", "OUT", "--n-eval", "-1"], "--n-eval"),
    (["synth", "--out", "OUT", "--short-share", "1.5"], "--short-share"),
    (["rollout", "--policy", "gold", "--tasks", "T", "--out", "OUT", "--n", "-1"], "--n"),
    (["rollout", "--policy", "gold", "--tasks", "T", "--out", "OUT", "--limit", "-2"], "--limit"),
    (["rollout", "--policy", "gold", "--tasks", "T", "--out", "OUT", "--max-turns", "0"], "--max-turns"),
    (["rollout", "--policy", "gold", "--tasks", "T", "--out", "OUT", "--temperature", "-1"], "--temperature"),
    (["eval", "--policy", "gold", "--suite", "kit-eval", "--out", "OUT", "--limit", "-1"], "--limit"),
    (["eval", "--policy", "gold", "--suite", "kit-eval", "--out", "OUT", "--max-new-tokens", "0"], "--max-new-tokens"),
    (["train", "--out", "OUT", "--max-steps", "-1"], "--max-steps"),
    (["train", "--out", "OUT", "--sft-steps", "0"], "--sft-steps"),
    (["train", "--out", "OUT", "--threads", "-2"], "--threads"),
    (["atlas", "run", "--tasks", "T", "--out", "OUT", "--limit", "-2"], "--limit"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "option"), BAD_COUNTS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in BAD_COUNTS]
)
def test_a_count_that_is_not_positive_is_refused_by_the_parser(argv, option, capsys):
    """Before: each was accepted (-1 then acted as a Python slice, or started training)."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    line = one_error_line(capsys)  # the problem, not the whole usage
    assert line.startswith(f"mcp-rl {argv[0]}") and f"argument {option}: " in line and argv[-1] in line


def test_synth_with_a_negative_count_writes_nothing(tmp_path, capsys):
    """Before: exit 0 with train.jsonl (0 tasks), eval.jsonl and summary.json written."""
    out = tmp_path / "tasks"
    with pytest.raises(SystemExit) as exit_:
        main(["synth", "--n", "-5", "--no-validate", "--no-progress", "--out", str(out)])
    assert exit_.value.code == 2 and not out.exists()
    assert "argument --n: must be a positive integer, got -5" in one_error_line(capsys)


# ---- train: files and recipe keys before any stage ---------------------------------------------------


@pytest.fixture
def no_stage(monkeypatch):
    """Fails the test if training gets as far as building a backend (loading the model) or a stage."""
    from toolkit.train import pipeline

    def started(*args, **kwargs):
        raise AssertionError("work started before the input was refused")

    monkeypatch.setattr(pipeline, "make_backend", started)
    monkeypatch.setattr(pipeline, "run_stages", started)
    monkeypatch.setattr("toolkit.train.task_sources.synthesize_tasks", started)


TRAIN = ["train", "--recipe", "cpu-demo", "--model", "tiny-random", "--backend", "cpu"]


def test_train_refuses_a_tasks_file_that_is_not_there(tmp_path, capsys, no_stage):
    """Before: the missing file was passed over and tasks were synthesised and trained on."""
    out = tmp_path / "run"
    assert main([*TRAIN, "--out", str(out), "--tasks", str(tmp_path / "nope.jsonl")]) == 1
    assert one_error_line(capsys) == f"mcp-rl train: error: --tasks {tmp_path / 'nope.jsonl'}: no such file"
    assert not out.exists()
    assert main([*TRAIN, "--out", str(out), "--tasks", str(TASKS), "--eval-tasks", str(tmp_path / "e")]) == 1
    assert "--eval-tasks" in one_error_line(capsys) and not out.exists()


def test_train_refuses_a_tasks_file_that_does_not_parse(tmp_path, capsys, no_stage):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text(TASKS.read_text().splitlines()[0] + "\n{not json\n")
    out = tmp_path / "run"
    assert main([*TRAIN, "--out", str(out), "--tasks", str(bad)]) == 1
    assert f"{bad}:2:" in one_error_line(capsys) and not out.exists()


@pytest.mark.parametrize(
    "setting",
    [
        "grpo.nosuch_knob=1",
        "sft.nosuch_knob=1",
        "lora.nosuch_knob=1",
        "eval.nosuch_knob=1",
        "eval.rollout.nosuch_knob=1",
        "synth.nosuch_knob=1",
        "synth.preset=nosuch",
        "reward_config.prove-kit.nosuch_knob=1",
        "reward=[rubric, nosuch-reward]",
    ],
)
def test_train_refuses_an_unknown_recipe_key_before_any_stage(tmp_path, capsys, no_stage, setting):
    """Before: ``--set grpo.nosuch_knob=1`` failed only when GRPO's config was built, after the warm
    start (147 s)."""
    out = tmp_path / "run"
    assert main([*TRAIN, "--out", str(out), "--set", setting]) == 1
    line = one_error_line(capsys)
    assert line.startswith("mcp-rl train: error: recipe 'cpu-demo': ") and "nosuch" in line, line
    assert not out.exists()


def test_the_shipped_recipes_pass_the_checks():
    from toolkit.train.config import check_recipe_types, list_recipes, load_recipe

    for name in list_recipes():
        check_recipe_types(load_recipe(name))


# ---- adapters ----------------------------------------------------------------------------------------


@pytest.fixture
def no_model_load(monkeypatch):
    import transformers

    def loaded(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", loaded)


def test_an_adapter_for_another_model_is_refused_before_loading(tmp_path, capsys, no_model_load):
    """Before: the model and adapter loaded, then PEFT raised about 30 lines of size mismatches."""
    out = tmp_path / "o.jsonl"
    argv = ["rollout", "--policy", "tiny-random", "--adapter", str(SHIPPED_ADAPTER), "--tasks", str(TASKS)]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 1
    assert one_error_line(capsys) == (
        f"mcp-rl rollout: error: {SHIPPED_ADAPTER} is an adapter for smollm2-135m (its "
        "adapter_config.json), not for tiny-random"
    )
    assert not out.exists()
    argv = ["eval", "--policy", "hf:tiny-random", "--adapter", str(SHIPPED_ADAPTER), "--suite", "kit-eval"]
    assert main([*argv, "--out", str(tmp_path / "ev")]) == 1
    assert "is an adapter for smollm2-135m" in one_error_line(capsys) and not (tmp_path / "ev").exists()


def test_an_adapter_is_matched_to_its_model_by_name_or_by_shape(tmp_path):
    from toolkit.models import WrongBaseModel, check_adapter

    check_adapter(SHIPPED_ADAPTER, "smollm2-135m")
    check_adapter(SHIPPED_ADAPTER, "vllm:smollm2-135m")
    check_adapter(SHIPPED_ADAPTER, "hf:smollm2-135m")
    check_adapter(SHIPPED_ADAPTER, "gold")  # no model, nothing to fit
    # a run's own adapter names the base by its cache folder, on whatever machine trained it
    config = json.loads((SHIPPED_ADAPTER / "adapter_config.json").read_text())
    moved = tmp_path / "moved"
    moved.mkdir()
    config["base_model_name_or_path"] = "/home/someone/.cache/mcp-rl-kit/models/smollm2-135m"
    (moved / "adapter_config.json").write_text(json.dumps(config))
    check_adapter(moved, "smollm2-135m")
    with pytest.raises(WrongBaseModel, match="is an adapter for smollm2-135m"):
        check_adapter(moved, "tiny-random")
    # two folders of different shapes: refused; of the same shape (a copy of the model): accepted
    small, same, other = (tmp_path / n for n in ("small", "same", "other"))
    for folder, hidden in ((small, 64), (same, 64), (other, 128)):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": hidden}))
    config["base_model_name_or_path"] = str(small)
    (moved / "adapter_config.json").write_text(json.dumps(config))
    check_adapter(moved, str(same))
    with pytest.raises(WrongBaseModel, match=f"is an adapter for {small}"):
        check_adapter(moved, str(other))
    with pytest.raises(FileNotFoundError, match="no adapter_config.json"):
        check_adapter(tmp_path, "smollm2-135m")


# ---- small things --------------------------------------------------------------------------------------


def test_score_json_is_strict_json(tmp_path, capsys):
    """Before: prove-kit's range (-inf, 1] was printed as ``-Infinity``, which no JSON parser reads."""
    trajs = tmp_path / "trajs.jsonl"
    call = CallRecord("percent_of", {"percent": 20, "value": 200}, True, result="40.0")
    write_jsonl(
        trajs,
        [Trajectory(task_id="calc-0", messages=[], calls=[call], final_answer="40", stop_reason="finish")],
    )
    assert (
        main(
            ["score", "--reward", "prove-kit", "--tasks", str(TASKS), "--trajectories", str(trajs), "--json"]
        )
        == 0
    )

    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")

    out = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert out["aggregate"]["range"] == [None, 1.0]


def test_dumps_writes_non_finite_numbers_as_null(tmp_path):
    from toolkit.records import dumps

    value = {"a": float("nan"), "b": [1.5, float("-inf"), {"c": float("inf")}], "d": (2,)}
    assert json.loads(dumps(value)) == {"a": None, "b": [1.5, None, {"c": None}], "d": [2]}
    write_jsonl(tmp_path / "t.jsonl", [Trajectory(task_id="x", messages=[], metadata={"loss": float("nan")})])
    assert "NaN" not in (tmp_path / "t.jsonl").read_text()
    assert read_jsonl(tmp_path / "t.jsonl", Trajectory)[0].metadata == {"loss": None}


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_help_texts_show_percent_signs_once():
    """Before: `mcp-rl eval --help` and `mcp-rl compare --help` printed "95%%" (argparse formats help=
    strings with %, not descriptions)."""
    shown = {p.prog: p.format_help() for p in _parsers(build_parser())}
    assert len(shown) > 10
    assert [prog for prog, text in shown.items() if "%%" in text] == []
    assert "95% bootstrap" in shown["mcp-rl eval"]


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"mcp-rl {toolkit.__version__}\n"


def test_errors_are_one_plain_line(tmp_path, capsys, monkeypatch):
    """Before: ``error: FileNotFoundError: [Errno 2] No such file or directory: '...'``."""
    missing = tmp_path / "nope.jsonl"
    assert main(["rollout", "--policy", "gold", "--tasks", str(missing), "--out", str(tmp_path / "o")]) == 1
    assert one_error_line(capsys) == f"mcp-rl rollout: error: {missing}: No such file or directory"

    from toolkit.cli import score as commands

    def dump(args):
        raise RuntimeError("Error(s) in loading state_dict:\n\tsize mismatch for a\n\tsize mismatch for b")

    monkeypatch.setattr(commands, "run_score", dump)
    assert main(["score", "--reward", "rubric", "--tasks", "t", "--trajectories", "t"]) == 1
    assert one_error_line(capsys) == (
        "mcp-rl score: error: Error(s) in loading state_dict: (2 more lines: MCP_RL_DEBUG=1 shows them)"
    )

    def bug(args):
        return {}["missing"]

    monkeypatch.setattr(commands, "run_score", bug)
    assert main(["score", "--reward", "rubric", "--tasks", "t", "--trajectories", "t"]) == 1
    line = one_error_line(capsys)  # a bug says so, with what Python said, and how to see more
    assert (
        line
        == "mcp-rl score: error: internal error (KeyError: 'missing'); MCP_RL_DEBUG=1 shows the traceback"
    )
