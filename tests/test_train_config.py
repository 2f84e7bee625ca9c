"""Recipes, config building, the rollout adapter and callbacks (fast, no model)."""

from __future__ import annotations

import json

import pytest

from toolkit.records import CallRecord, Trajectory
from toolkit.train import config as cfg
from toolkit.train.rollout import episode_metrics, token_sample

EOS = 2


def test_every_shipped_recipe_builds_trl_configs(tmp_path):
    names = cfg.list_recipes()
    assert {"bespoke", "scale", "prove", "cpu-demo"} <= set(names)
    for name in names:
        recipe = cfg.load_recipe(name)
        grpo = cfg.build_grpo_config(recipe, tmp_path / name, use_cpu=True)
        assert grpo.remove_unused_columns is False  # the task column must reach the rollout
        recipe.loop_config()  # every rollout key is a RolloutConfig field
        if recipe.sft is not None:
            assert cfg.build_sft_config(recipe, tmp_path / f"{name}-sft", use_cpu=True).max_steps > 0
        cfg.build_lora_config(recipe)


def test_recipes_match_the_write_ups(tmp_path):
    bespoke = cfg.load_recipe("bespoke")
    g = cfg.build_grpo_config(bespoke, tmp_path, use_cpu=True)
    assert (g.beta, g.num_iterations, g.learning_rate, g.warmup_steps, g.max_grad_norm) == (
        0.001,
        2,
        1e-6,
        20,
        0.2,
    )
    assert g.lr_scheduler_type == "constant_with_warmup" and g.mask_truncated_completions
    assert cfg.ref_sync_settings(bespoke) == (True, 100, 1.0)
    assert bespoke.reward == "bfcl"
    scale = cfg.load_recipe("scale")
    assert scale.lora["r"] == 32 and scale.reward == "rubric"
    prove = cfg.load_recipe("prove")
    gp = cfg.build_grpo_config(prove, tmp_path, use_cpu=True)
    assert (gp.beta, gp.num_generations, gp.per_device_train_batch_size, prove.reward) == (
        0.01,
        16,
        16,
        "prove",
    )
    demo = cfg.load_recipe("cpu-demo")
    assert demo.model == "smollm2-135m" and demo.sft is not None and demo.dtype == "bf16-if-native"


def test_unknown_keys_are_errors(tmp_path):
    with pytest.raises(cfg.RecipeError, match="unknown key"):
        cfg.recipe_from_dict({"model": "m", "reward": "rubric", "lerning_rate": 1})
    with pytest.raises(cfg.RecipeError, match="unknown rollout key"):
        cfg.recipe_from_dict({"model": "m", "reward": "rubric", "rollout": {"max_turn": 3}})
    with pytest.raises(cfg.RecipeError, match="unknown recipe"):
        cfg.load_recipe("no-such-recipe")
    bad = cfg.recipe_from_dict({"model": "m", "reward": "rubric", "grpo": {"not_a_knob": 1}})
    with pytest.raises(cfg.RecipeError, match="bad grpo section"):
        cfg.build_grpo_config(bad, tmp_path, use_cpu=True)


def test_several_rewards_become_several_trl_reward_functions(tmp_path):
    from toolkit.train.grpo import reward_funcs

    recipe = cfg.recipe_from_dict(
        {"model": "m", "reward": ["rubric", "prove"], "grpo": {"reward_weights": [1.0, 0.5]}}
    )
    assert cfg.build_grpo_config(recipe, tmp_path, use_cpu=True).reward_weights == [1.0, 0.5]
    funcs = reward_funcs(recipe.reward, {"prove": {}})
    assert [f.__name__ for f in funcs] == ["reward_rubric", "reward_prove"]
    with pytest.raises(cfg.RecipeError, match="1 weight"):
        cfg.recipe_from_dict({"model": "m", "reward": ["rubric", "prove"], "grpo": {"reward_weights": [1.0]}})


def test_overrides_and_yaml_path(tmp_path):
    recipe = cfg.with_overrides(cfg.load_recipe("cpu-demo"), {"grpo.max_steps": 3, "model": "tiny-random"})
    assert recipe.grpo["max_steps"] == 3 and recipe.model == "tiny-random"
    path = tmp_path / "mine.yaml"
    path.write_text("model: tiny-random\nreward: rubric\ngrpo: {max_steps: 1}\n")
    assert cfg.load_recipe(path).name == "mine"


def test_a_recipe_with_a_base_lays_its_keys_over_the_base_section_by_section(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "base: cpu-learn\n"
        "description: mine\n"
        "rft: {num_generations: 2}\n"  # a section the base lacks
        "grpo: {max_steps: 3}\n"  # one key of a section the base has
        "reward_config: {outcome: {extra_call_factor: 0.25}}\n"
        "eval: null\n"  # a section removed
        "reward: [outcome, finished]\n"  # a list replaces the base's
    )
    (tmp_path / "child.yaml").write_text("base: mine.yaml\nseed: 7\n")  # a path beside the file
    base = cfg.load_recipe("cpu-learn").to_dict()
    mine = cfg.load_recipe(tmp_path / "child.yaml")
    data = mine.to_dict()
    assert mine.name == "child" and mine.seed == 7 and mine.description == "mine"
    assert data["rft"] == {"num_generations": 2} and mine.reward == ["outcome", "finished"]
    assert data["grpo"] == {**base["grpo"], "max_steps": 3}
    assert data["reward_config"] == {"outcome": {"extra_call_factor": 0.25}}
    assert data["eval"] == {} and data["rollout"] == base["rollout"] and data["lora"] == base["lora"]
    assert cfg.load_recipe("cpu-learn").to_dict() == base  # the base itself is untouched


def test_a_bad_base_names_the_file(tmp_path):
    loop_a, loop_b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    loop_a.write_text("base: b.yaml\n")
    loop_b.write_text("base: a.yaml\n")
    with pytest.raises(cfg.RecipeError, match=r"comes back to itself \(a -> b -> a\)"):
        cfg.load_recipe(loop_a)
    (tmp_path / "c.yaml").write_text("base: no-such-recipe\n")
    with pytest.raises(cfg.RecipeError, match="unknown recipe 'no-such-recipe'"):
        cfg.load_recipe(tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("base: missing.yaml\n")
    with pytest.raises(cfg.RecipeError, match="missing.yaml: cannot read it"):
        cfg.load_recipe(tmp_path / "d.yaml")
    (tmp_path / "e.yaml").write_text("base: [cpu-learn]\n")
    with pytest.raises(cfg.RecipeError, match="e.yaml: base must be a recipe name"):
        cfg.load_recipe(tmp_path / "e.yaml")


def test_a_runs_recipe_json_loads_back_as_the_same_recipe(tmp_path):
    recipe = cfg.with_overrides(
        cfg.load_recipe("cpu-demo"), {"reward": ["rubric", "prove"], "grpo.reward_weights": [1.0, 0.25]}
    )
    saved = tmp_path / "recipe.json"
    saved.write_text(json.dumps(recipe.to_dict()))
    again = cfg.load_recipe(saved)
    assert again.name == "cpu-demo" and again.to_dict() == recipe.to_dict()


def test_peft_ref_sync_keys_are_handled_by_the_kit(tmp_path):
    kwargs = cfg.grpo_kwargs(cfg.load_recipe("bespoke"), tmp_path, use_cpu=True)
    assert not set(cfg.PEFT_REF_SYNC_KEYS) & set(kwargs)  # TRL's own sync refuses PEFT models


def _traj(stop, ids, mask, **kw):
    return Trajectory(
        task_id="t",
        messages=[],
        stop_reason=stop,
        prompt_ids=[5, 6],
        completion_ids=ids,
        completion_mask=mask,
        logprobs=[-0.5] * len(ids),
        **kw,
    )


def test_trl_sample_trims_trailing_env_tokens_so_finished_episodes_end_on_eos():
    # model turn (10, 11, EOS), tool output (20, 21), model turn (12, EOS), trailing env tokens (22, 23)
    traj = _traj("max_turns", [10, 11, EOS, 20, 21, 12, EOS, 22, 23], [1, 1, 1, 0, 0, 1, 1, 0, 0])
    prompt, ids, logprobs, mask = token_sample(traj, EOS)
    assert prompt == [5, 6]
    assert ids == [10, 11, EOS, 20, 21, 12, EOS] and ids[-1] == EOS
    assert mask == [1, 1, 1, 0, 0, 1, 1] and len(logprobs) == len(ids)


def test_trl_sample_keeps_length_cut_episodes_truncated_and_masks_env_failures():
    cut = _traj("length", [10, 11, 20, 21], [1, 1, 0, 0])
    assert token_sample(cut, EOS)[1][-1] != EOS  # TRL's mask_truncated_completions sees the cut
    broken = _traj("error", [10, EOS], [1, 1])
    assert token_sample(broken, EOS)[3] == [0, 0]
    empty = _traj("error", [], [])
    assert token_sample(empty, EOS)[1:] == ([EOS], [0.0], [0])


def test_episode_metrics():
    ok = CallRecord(name="a", args={}, ok=True)
    bad = CallRecord(name="b", args=None, ok=False, error="bad_json: x")
    trajs = [
        Trajectory(
            task_id="1", messages=[], calls=[ok, bad], stop_reason="finish", completion_mask=[1, 1, 0]
        ),
        Trajectory(task_id="2", messages=[], calls=[], stop_reason="no_tool_call", completion_mask=[1]),
    ]
    m = episode_metrics(trajs)
    assert m["episodes/tool_calls_mean"] == 1.0 and m["episodes/tool_failure_rate"] == 0.5
    assert m["episodes/finish_rate"] == 0.5 and m["episodes/stop_no_tool_call"] == 0.5
    assert m["episodes/model_tokens_mean"] == 1.5
    json.dumps(m)


def test_cli_overrides():
    import argparse

    from toolkit.cli.train import parse_overrides, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["train", "--out", "x", "--max-steps", "3", "--set", "grpo.beta=0.01", "--set", "lora.r=8"]
    )
    o, unset = parse_overrides(args)
    assert o["grpo.max_steps"] == 3 and o["grpo.beta"] == 0.01 and o["lora.r"] == 8 and unset == []
    # --set KEY=null removes a section (no warm start); unset flags keep the recipe's values
    o, unset = parse_overrides(parser.parse_args(["train", "--out", "x", "--set", "sft=null"]))
    assert unset == ["sft"]
    recipe = cfg.with_overrides(cfg.load_recipe("cpu-demo"), o, unset=unset)
    assert recipe.sft is None and recipe.model == cfg.load_recipe("cpu-demo").model
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_overrides(parser.parse_args(["train", "--out", "x", "--set", "nonsense"]))


def test_numbers_with_an_exponent_and_no_dot_are_numbers(tmp_path):
    """YAML 1.1 (PyYAML) reads ``2e-4`` as a string; a learning rate so written crashed run 18 after
    its warm start. Recipes and --set values read it as YAML 1.2 does; integers stay integers."""
    import argparse

    from toolkit.cli.train import parse_overrides, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    sets = ["grpo.learning_rate=2e-4", "sft.learning_rate=1.0e-3", "grpo.max_grad_norm=.5E+1", "lora.r=8"]
    o, _ = parse_overrides(
        parser.parse_args(["train", "--out", "x", *(a for s in sets for a in ("--set", s))])
    )
    assert (
        o["grpo.learning_rate"] == 2e-4 and o["sft.learning_rate"] == 1e-3 and o["grpo.max_grad_norm"] == 5.0
    )
    assert o["lora.r"] == 8 and isinstance(o["lora.r"], int)
    path = tmp_path / "mine.yaml"
    path.write_text("model: tiny-random\nreward: rubric\ngrpo: {learning_rate: 3e-5, run_name: 1e3x}\n")
    grpo = cfg.load_recipe(path).grpo
    assert grpo["learning_rate"] == 3e-5 and grpo["run_name"] == "1e3x"
    assert cfg.build_grpo_config(cfg.load_recipe(path), tmp_path / "o", use_cpu=True).learning_rate == 3e-5


def test_a_string_where_a_trainer_wants_a_number_fails_before_any_stage(tmp_path):
    from toolkit.train.pipeline import run_recipe

    for name in cfg.list_recipes():
        cfg.check_recipe_types(cfg.load_recipe(name))  # every shipped recipe passes
    bad = cfg.with_overrides(cfg.load_recipe("cpu-demo"), {"grpo.learning_rate": "fast"})
    with pytest.raises(cfg.RecipeError, match=r"grpo.learning_rate must be a number \(float\), got 'fast'"):
        run_recipe(bad, tmp_path / "run", backend="cpu")
    assert not (tmp_path / "run").exists()  # nothing was started, nothing written
    for section, key, value, kind in [
        ("sft", "max_steps", "20", "int"),
        ("grpo", "num_generations", 2.5, "int"),
        ("rollout", "temperature", True, "float"),
    ]:
        bad = cfg.with_overrides(cfg.load_recipe("cpu-demo"), {f"{section}.{key}": value})
        with pytest.raises(cfg.RecipeError, match=rf"{section}.{key} must be a number \({kind}\)"):
            cfg.check_recipe_types(bad)


def test_gpu_path_configs_follow_unsloth_and_fail_clearly_on_cpu(tmp_path):
    from toolkit.train import unsloth_backend as ub
    from toolkit.train.device import BackendUnavailable, DeviceInfo, detect_backend
    from toolkit.train.pipeline import run_recipe

    scale = cfg.load_recipe("scale")
    load = ub.unsloth_load_kwargs(scale, fast_inference=True)
    assert load["fast_inference"] is True and load["max_lora_rank"] == 32 and load["max_seq_length"] == 6144
    lora = ub.unsloth_lora_kwargs(scale)
    assert (
        lora["r"] == 32
        and lora["use_gradient_checkpointing"] == "unsloth"
        and "q_proj" in lora["target_modules"]
    )
    assert ub.gpu_grpo_overrides()["use_vllm"] is True
    # the grpo kwargs plus the GPU overrides are a valid GRPOConfig argument set (vLLM colocate)
    kwargs = cfg.grpo_kwargs(scale, tmp_path, use_cpu=False) | ub.gpu_grpo_overrides()
    assert kwargs["vllm_mode"] == "colocate" and kwargs["bf16"] is True
    on_cpu = DeviceInfo(cuda=False, gpu_name=None, missing_gpu_packages=("unsloth", "vllm"))
    assert detect_backend("auto", on_cpu) == "cpu"
    with pytest.raises(BackendUnavailable):
        run_recipe(scale, tmp_path / "run", backend="gpu")


def test_metrics_file_drops_steps_after_the_resumed_checkpoint(tmp_path):
    from types import SimpleNamespace

    from toolkit.train.callbacks import MetricsJsonlCallback

    path = tmp_path / "metrics.jsonl"
    cb = MetricsJsonlCallback(path, "grpo", step_offset=10)
    for step in (1, 2, 3):
        cb.on_log(
            None,
            SimpleNamespace(is_world_process_zero=True, global_step=step),
            None,
            logs={"reward": 0.1 * step},
        )
    resumed = MetricsJsonlCallback(path, "grpo", step_offset=10)
    resumed.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=2), None)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["step"] for r in rows] == [11, 12] and rows[0]["phase"] == "grpo" and rows[1]["reward"] == 0.2


def test_metrics_file_drops_a_phase_restarted_from_step_0_but_not_an_earlier_round(tmp_path):
    """Before: a GRPO stopped before its first checkpoint and begun again from step 0 kept the stopped
    attempt's rows (the callback skipped the cleanup at step 0), so the file had two rows for a step."""
    from types import SimpleNamespace

    from toolkit.train.callbacks import MetricsJsonlCallback

    path = tmp_path / "metrics.jsonl"

    def log(cb: MetricsJsonlCallback, steps: range) -> None:
        for step in steps:
            state = SimpleNamespace(is_world_process_zero=True, global_step=step)
            cb.on_log(None, state, None, logs={"loss": float(step)})

    log(MetricsJsonlCallback(path, "rft", step_offset=10), range(1, 4))  # round 1: steps 11-13
    log(MetricsJsonlCallback(path, "grpo", step_offset=13), range(1, 3))  # a GRPO stopped unsaved
    round_2 = MetricsJsonlCallback(path, "rft", step_offset=13)  # a second round, from its step 0
    round_2.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=0), None)
    again = MetricsJsonlCallback(path, "grpo", step_offset=13)
    again.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=0), None)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(r["phase"], r["step"]) for r in rows] == [("rft", 11), ("rft", 12), ("rft", 13)]


def test_grpo_task_kinds_narrow_grpo_and_leave_the_warm_start_every_kind(tmp_path):
    from toolkit.records import Task
    from toolkit.train.pipeline import grpo_tasks, load_train_tasks

    kinds = ["lookup", "write", "chain", "write", "lookup"]
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        "".join(
            json.dumps(Task(f"t{i}", "train", "p", [], [], 0, metadata={"kind": k}).to_dict()) + "\n"
            for i, k in enumerate(kinds)
        )
    )
    recipe = cfg.with_overrides(cfg.load_recipe("cpu-demo"), {"grpo_task_kinds": ["lookup", "chain"]})
    tasks = load_train_tasks(recipe, path)
    assert [t.id for t in tasks] == ["t0", "t1", "t2", "t3", "t4"]  # SFT still sees writes
    assert [t.id for t in grpo_tasks(recipe, tasks)] == ["t0", "t2", "t4"]
    unset = cfg.with_overrides(recipe, {}, unset=["grpo_task_kinds"])
    assert grpo_tasks(unset, tasks) == tasks
    with pytest.raises(ValueError, match="none of the 5 training tasks"):
        grpo_tasks(cfg.with_overrides(recipe, {"grpo_task_kinds": ["abstain"]}), tasks)


def test_cpu_learn_batches_four_tasks_of_eight_per_optimizer_step(tmp_path):
    """Issue 31: at least 4 distinct tasks x 8 episodes in one optimizer step (TRL: one generation batch
    of generation_batch_size / num_generations tasks per step when steps_per_generation equals
    gradient_accumulation_steps), batch-std scaling, kinds mixed, dynamic sampling."""
    from toolkit.train.batching import SamplingConfig, tasks_per_step

    recipe = cfg.load_recipe("cpu-learn")
    cfg.check_recipe_types(recipe)
    g = cfg.build_grpo_config(recipe, tmp_path, use_cpu=True)
    assert g.num_generations == 8 and tasks_per_step(g) >= 4
    assert g.steps_per_generation == g.gradient_accumulation_steps  # one generation batch per optimizer step
    assert g.generation_batch_size == g.per_device_train_batch_size * g.gradient_accumulation_steps
    assert g.scale_rewards == "batch" and g.num_iterations == 1
    sampling = SamplingConfig.from_recipe(recipe.grpo_sampling)
    assert sampling.order == "stratified" and sampling.dynamic and recipe.grpo_task_kinds is None
    assert sampling.shared_prefix_update is True
    assert sampling.spread_on == "outcome"  # run 21: groups kept when their answers differ
    assert recipe.reward == ["outcome"]
    demo = cfg.load_recipe("cpu-demo")  # the frozen record keeps one task a step
    assert tasks_per_step(cfg.build_grpo_config(demo, tmp_path / "d", use_cpu=True)) == 1
    assert demo.grpo_sampling == {}


def test_grpo_sampling_section_is_checked_when_read_and_before_a_run():
    base = {"model": "m", "reward": "rubric"}
    ok = cfg.recipe_from_dict({**base, "grpo_sampling": {"order": "stratified", "min_spread": 0.1}})
    assert ok.grpo_sampling == {"order": "stratified", "min_spread": 0.1}
    for section, message in [
        ({"oder": "stratified"}, "unknown key"),
        ({"order": "by-kind"}, "order must be one of"),
        ({"spread": "iqr"}, "spread must be one of"),
        ({"min_spread": -0.1}, "must not be negative"),
        ({"kind_weights": {"lookup": -1}}, "kind_weights"),
        ({"kind_weights": {"lookup": 0}}, "kind_weights"),
        ({"shared_prefix_update": "yes"}, "true or false"),
        ({"spread_on": 3}, "spread_on must be a reward component name"),
        ({"flat_groups": "zero"}, "flat_groups must be one of"),
        ("stratified", "must be a mapping"),
    ]:
        with pytest.raises(cfg.RecipeError, match=message):
            cfg.recipe_from_dict({**base, "grpo_sampling": section})
    recipe = cfg.with_overrides(cfg.load_recipe("cpu-learn"), {"grpo_sampling.max_refill_rounds": 2})
    assert recipe.grpo_sampling["max_refill_rounds"] == 2
    recipe.grpo_sampling["min_spread"] = "0.05"  # e.g. a quoted --set value: caught before any stage
    with pytest.raises(cfg.RecipeError, match=r"grpo_sampling.min_spread must be a number \(float\)"):
        cfg.check_recipe_types(recipe)
