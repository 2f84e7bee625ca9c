"""The notebooks' prose agrees with their outputs and records (issue 51).

Read by a reader on GitHub, an executed copy in docs/notebooks/ contradicted itself: notebook 04's run
got three pass@0.75 changes (+0.000 in 04's output, +0.033 in 05's, -0.033 in 04's prose), 05 cited "20
SFT steps" where the shipped warm start had 60, and no prose said that GRPO made BFCL transfer worse.

Here every result the prose quotes (pass rates, changes and their intervals, percentages, step counts) is
found and checked against what the executed copies print or the records they read (the kept proof runs in
docs/cpu-proof/, data/adapters/cpu-learn/record.json, the recipes, data/reference_results.json). The prose
read is the source notebooks' (what the next `make docs-notebooks` publishes); a separate test says when a
published copy's prose is behind its source. Numbers that change from run to run are printed by the
notebooks, not written in their prose: a quoted number nothing here checks fails
`test_every_quoted_result_is_checked`.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat
import pytest
import yaml

from toolkit import notebooks
from toolkit.eval import claim as kit_claim
from toolkit.eval.metrics import CONFIDENCE, exact_interval
from toolkit.paths import REPO_ROOT

SOURCES = notebooks.NOTEBOOKS_DIR
PUBLISHED = notebooks.DOCS_NOTEBOOKS
README = REPO_ROOT / "README.md"
PRIMARY = "pass@0.75"

# A quoted result: a signed change (+0.085, -0.033, +10.2), a rate with three decimals (0.255), a percentage,
# either side of an arrow (18.8 -> 29.0), a step count (20-step, 60 SFT steps, step 50). Not a version, a
# name (Qwen2.5-7B, pass@0.75), a knob in backticks or a duration (7.1 s, 1.55 times).
QUOTED = re.compile(
    r"""(?<![\w.@/-])[+\-−]\d*\.\d+%?
      | (?<![\w.@/-])0\.\d{3}(?!\d)
      | (?<![\w.@/-])\d+(?:\.\d+)?%
      | (?<![\w.@/-])\d+(?:\.\d+)?(?=%?\ ->)
      | (?<=->\ )\d+(?:\.\d+)?
      | \b\d+(?:-step\b|\ (?:SFT\ |GRPO\ )?steps?\b)
      | \bsteps?\ \d+\b""",
    re.X,
)


# ---- reading notebooks ---------------------------------------------------------------------------------


@cache
def source(stem: str):
    return nbformat.read(str(SOURCES / f"{stem}.ipynb"), as_version=4)


@cache
def published(stem: str):
    return nbformat.read(str(PUBLISHED / f"{stem}.ipynb"), as_version=4)


def flat(text: str) -> str:
    """Markdown as one line: indented and fenced code blocks out (commands, not claims), whitespace single."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    return re.sub(r"\s+", " ", text).strip()


def prose(nb) -> str:
    """The markdown of a notebook after its header cell (links), as one line."""
    return flat(" ".join(c.source for c in nb.cells[1:] if c.cell_type == "markdown"))


def readme_results() -> str:
    text = README.read_text(encoding="utf-8")
    return flat(text.split("## What you will see", 1)[1].split("\n## ", 1)[0])


def prose_of(where: str) -> str:
    return readme_results() if where == "README" else prose(source(where))


def parameters(nb) -> dict:
    """The literal values a run used: the parameters cell, then papermill's injected cell over it."""
    values: dict = {}
    for tag in ("parameters", "injected-parameters"):
        for cell in nb.cells:
            if tag in cell.metadata.get("tags", []):
                for node in ast.parse(cell.source).body:
                    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                        try:
                            values[node.targets[0].id] = ast.literal_eval(node.value)
                        except ValueError:
                            pass
    return values


def outputs(cell) -> list[str]:
    """The text of each output of a code cell: printed streams, and the plain text of displays."""
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            texts.append(out["text"])
        elif "data" in out:
            texts.append(out["data"].get("text/plain", ""))
    return texts


def cell_outputs(nb, marker: str) -> list[str]:
    """The outputs of the one code cell whose source contains ``marker``."""
    [cell] = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    return outputs(cell)


def printed_frame(text: str) -> dict[str, list[str]]:
    """A DataFrame as pandas prints it: index -> its cells, the blocks of a wide frame joined (header
    lines come out as rows keyed by their first column's name, which no lookup uses)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = [f for f in line.split() if f != "\\"]
        if fields:
            rows.setdefault(fields[0], []).extend(fields[1:])
    return rows


PAIRED = ("before", "after", "diff", "ci_low", "ci_high", "n_pairs", "outside_ci")


def paired_rows(nb, marker: str) -> dict[str, dict[str, str]]:
    """metric -> its row, from the last paired table (``report.paired_table``: suite, metric, then the
    columns in ``PAIRED``) the marked cell displays; cells read from the end (a label may hold spaces)."""
    [text] = [t for t in cell_outputs(nb, marker) if "n_pairs" in t and "metric" in t][-1:]
    rows = {}
    for cells in printed_frame(text).values():
        if len(cells) > len(PAIRED) and cells[-1] in ("True", "False"):
            rows[cells[-len(PAIRED) - 1]] = dict(zip(PAIRED, cells[-len(PAIRED) :], strict=True))
    return rows


# ---- the records the prose quotes ----------------------------------------------------------------------


def recipe(name: str) -> dict:
    return yaml.safe_load((REPO_ROOT / "toolkit" / "train" / "recipes" / f"{name}.yaml").read_text())


def record_dir(stem: str, param: str) -> Path:
    return (SOURCES / parameters(source(stem))[param]).resolve()


def summary(stem: str, param: str) -> dict:
    return json.loads((record_dir(stem, param) / "summary.json").read_text())


def shipped_record(folder: str = "cpu-learn") -> dict:
    return json.loads((REPO_ROOT / "data" / "adapters" / folder / "record.json").read_text())


def shipped_recipe() -> dict:
    return json.loads((REPO_ROOT / "data" / "adapters" / "cpu-learn" / "recipe.json").read_text())


def reference(entry_id: str) -> dict:
    entries = json.loads((REPO_ROOT / "data" / "reference_results.json").read_text())["entries"]
    [entry] = [e for e in entries if e["id"] == entry_id]
    return entry


def rate(x: float) -> str:
    return f"{x:.3f}"


def signed(x: float) -> str:
    return f"{x:+.3f}"


def interval(c: dict) -> dict[str, str]:
    return {"diff": signed(c["diff"]), "lo": signed(c["ci_low"]), "hi": signed(c["ci_high"])}


def points(x: float, decimals: int = 1) -> str:
    """A published percentage as the write-ups quote it (Scale, PROVE: one decimal; Bespoke: none)."""
    return f"{x:.{decimals}f}"


def seeds_said(text: str) -> list[str]:
    return re.findall(r"\d{4}", text)


# ---- the claims ----------------------------------------------------------------------------------------

CHANGE = r"(?P<diff>[+-]\d\.\d{3}) \[(?P<lo>[+-]\d\.\d{3}), (?P<hi>[+-]\d\.\d{3})\]"
SEEDS = r"\d{4}(?:, \d{4})*(?:,? and \d{4})?"


@dataclass
class Claim:
    """A sentence of prose (``pattern``, whitespace as single spaces) and what its groups must read; or,
    for what is not a number, a ``check`` of the match that raises on a contradiction."""

    where: str  # a notebook's stem, or "README" (its "What you will see" section)
    pattern: str
    expected: Callable[[], dict[str, str]] | None = None
    check: Callable[[re.Match], None] | None = None
    every: bool = False  # the pattern may occur several times; each must agree

    @property
    def id(self) -> str:
        return f"{self.where}: {self.pattern[:60]}"


def nb04_budgets() -> dict[str, str]:
    used = parameters(published("04_grpo_training"))
    return {"sft": str(used["SFT_STEPS"]), "grpo": str(used["GRPO_STEPS"])}


def confidence() -> dict[str, str]:
    return {"level": f"{CONFIDENCE * 100:g}"}


def kept_dev() -> dict[str, str]:
    c = summary("04_grpo_training", "PROOF_RECORD")["comparison"][PRIMARY]
    return {"n": str(c["n_pairs"]), "before": rate(c["before"]), "after": rate(c["after"]), **interval(c)}


def kept_test(seed: str) -> Callable[[], dict[str, str]]:
    return lambda: interval(summary("04_grpo_training", "PROOF_RECORD")["test"][seed]["comparison"][PRIMARY])


def kept_test_claims() -> list[Claim]:
    seeds = sorted(summary("04_grpo_training", "PROOF_RECORD").get("test", {}))
    return [Claim("04_grpo_training", CHANGE + rf" \((?:seed )?{seed}\)", kept_test(seed)) for seed in seeds]


def fewer_calls_on_every_set(_: re.Match) -> None:
    kept = summary("04_grpo_training", "PROOF_RECORD")
    sets = {"dev": kept["comparison"], **{s: t["comparison"] for s, t in kept["test"].items()}}
    more = {
        name: c["tool_calls_per_task"]["diff"]
        for name, c in sets.items()
        if c["tool_calls_per_task"]["diff"] >= 0
    }
    assert not more, f"calls per task did not fall on {more}"


def kept_last_step() -> dict[str, str]:
    steps = [row["step"] for row in summary("04_grpo_training", "PROOF_RECORD")["curve"]]
    assert max(steps) == recipe("cpu-learn")["grpo"]["max_steps"], "the kept record is not the recipe's run"
    return {"step": str(max(steps))}


def bespoke() -> dict[str, str]:
    entry, grpo = reference("bespoke-bfcl-mt-base"), recipe("bespoke")["grpo"]
    assert grpo["sync_ref_model"]
    return {
        "before": points(entry["before"], 0),
        "after": points(entry["after"], 0),
        "beta": f"{grpo['beta']:g}",
        "sync": str(grpo["ref_model_sync_steps"]),
    }


def record_test_seeds(m: re.Match) -> None:
    said = seeds_said(m.group("seeds"))
    kept = sorted(
        k.removeprefix("test-seed") for k in shipped_record()["comparison"] if k.startswith("test-seed")
    )
    assert said == kept, f"prose names test seeds {said}, the shipped record has {kept}"


def shipped_seeds() -> dict[str, str]:
    return {
        "seed": str(parameters(source("05_results"))["SHIPPED_SEED"]),
        "dev": str(shipped_recipe()["synth"]["seed"]),
    }


def warm_start_steps() -> dict[str, str]:
    shipped = shipped_recipe()["sft"]["max_steps"]
    assert shipped == recipe("cpu-learn")["sft"]["max_steps"], "the shipped warm start is not cpu-learn's"
    return {"earlier": str(recipe("cpu-demo")["sft"]["max_steps"]), "shipped": str(shipped)}


def bfcl_exact() -> dict[str, str]:
    n = parameters(published("05_results"))["BFCL_LIMIT"]
    high = exact_interval(0, n)[1]
    [accuracy] = [
        t for t in cell_outputs(published("05_results"), "bfcl_sides, bfcl_model = None") if "exact_high" in t
    ]
    # suite, run (may hold spaces), right, n, accuracy, bootstrap_low, bootstrap_high, exact_low, exact_high
    sides = [
        cells
        for cells in printed_frame(accuracy).values()
        if len(cells) >= 8 and cells[-7:-5] == ["0", str(n)]
    ]
    assert sides, f"the executed copy shows no BFCL side with 0 right of {n}"
    assert all(abs(float(cells[-1]) - high) < 1e-4 for cells in sides), (sides, high)
    return {"n": str(n), "pct": f"{high * 100:.1f}"}


def scale() -> dict[str, str]:
    ids = {"c": "scale-mcp-atlas-coverage", "p5": "scale-mcp-atlas-pass050", "p7": "scale-mcp-atlas-pass075"}
    out = {}
    for key, entry_id in ids.items():
        entry = reference(entry_id)
        out[f"{key}b"], out[f"{key}a"] = points(entry["before"]), points(entry["after"])
    return out


def bespoke_05() -> dict[str, str]:
    entry = reference("bespoke-bfcl-mt-base")
    return {"b": points(entry["before"], 0), "a": points(entry["after"], 0)}


PROVE_MODELS = {"q4": "qwen3-4b", "q8": "qwen3-8b", "q25": "qwen2.5-7b", "g": "granite-4.1-8b"}


def prove() -> dict[str, str]:
    out = {}
    for key, model in PROVE_MODELS.items():
        bfcl, tau2 = reference(f"prove-bfcl-mt-{model}"), reference(f"prove-tau2-{model}")
        out[f"{key}b"], out[f"{key}a"] = points(bfcl["before"]), points(bfcl["after"])
        out[f"t{key}"] = f"+{tau2['after'] - tau2['before']:.1f}"
    out["headline"] = (
        f"+{reference('prove-bfcl-mt-qwen3-4b')['after'] - reference('prove-bfcl-mt-qwen3-4b')['before']:.1f}"
    )
    return out


def long_curve_check(m: re.Match) -> None:
    """Run 16's curve: its last step and spacing, flat (zero inside the CI) to the step the prose names,
    a gain outside the CI from the first step that has one and at every later step."""
    curve = {row["step"]: row["metrics"][PRIMARY] for row in summary("05_results", "CURVE_RECORD")["curve"]}
    steps = sorted(curve)
    assert {b - a for a, b in itertools.pairwise(steps)} == {int(m.group("every"))}
    assert steps[-1] == int(m.group("last"))
    gain = next(s for s in steps if curve[s]["ci_low"] > 0)
    assert gain == int(m.group("gain")) and all(curve[s]["ci_low"] > 0 for s in steps if s >= gain)
    flat = int(m.group("flat"))
    assert all(curve[s]["ci_low"] <= 0 <= curve[s]["ci_high"] for s in steps if s <= flat), (
        f"not flat to {flat}"
    )
    cpu_hour = max(row["step"] for row in summary("05_results", "PROOF_RECORD")["curve"])  # run 13's
    assert int(m.group("hour")) == cpu_hour == recipe("cpu-demo")["grpo"]["max_steps"]


def warm_start_passes() -> list[float]:
    """pass@0.75 of the shipped warm start wherever it was measured: the run's own dev and test sets (the
    record) and notebook 05's fresh set (its executed copy)."""
    found = [c["before"] for c in shipped_record()["comparison"].values()]
    fresh = paired_rows(published("05_results"), "shipped_table = report.paired_table")
    return [*found, float(fresh[PRIMARY]["before"])]


def readme_range(m: re.Match) -> None:
    found = warm_start_passes()
    said = (m.group("lo"), m.group("hi"))
    assert said == (f"{min(found):.2f}", f"{max(found):.2f}"), f"README says {said}, measured {sorted(found)}"


def count_word(n: int) -> str:
    """A small count as the prose writes it."""
    return ["one", "two", "three", "four", "five"][n - 1]


def regraded_dev() -> dict[str, str]:
    new = shipped_record()["grading"]["regrade_issue48"]["dev"]["new_grading"]
    return {"before": rate(new["before"]), "diff": signed(new["diff"])}


def regraded_tests() -> dict[str, str]:
    sets = shipped_record()["grading"]["regrade_issue48"]["test_sets"]
    diffs = [s["new_grading"]["diff"] for s in sets.values()]
    return {
        "mean": signed(sum(diffs) / len(diffs)),
        "n": count_word(len(diffs)),
    }


def shipped_claim_in_template() -> dict[str, str]:
    """The shipped claim's in-template diffs, sampled then greedy, as its record keeps them."""
    record = shipped_record("cpu-learn-rft3")
    group = record["claim"]["in_template"]
    return {
        **{f"s_{k}": v for k, v in interval(group["sampled"]).items()},
        **{f"g_{k}": v for k, v in interval(group["greedy"]).items()},
        "n_tasks": str(sum(record["claim"]["tasks_per_test_seed"].values())),
        "n_seeds": count_word(len(record["claim"]["grpo_seeds"])),
    }


def kit_target() -> dict[str, str]:
    [target] = re.findall(r'greedy\.get\("diff", -1\) >= (\d\.\d+)', inspect.getsource(kit_claim.criteria))
    return {"target": f"+{target}"}


CLAIMS = [
    Claim("04_grpo_training", r"a (?P<sft>\d+)-step warm start and (?P<grpo>\d+) GRPO steps", nb04_budgets),
    Claim(
        "04_grpo_training",
        r"It cannot show that GRPO helps: (?P<grpo>\d+) steps move the policy less than the paired "
        r"(?P<level>\d+)% interval of a (?P<n>\d+)-task evaluation",
        lambda: {
            "grpo": nb04_budgets()["grpo"],
            **confidence(),
            "n": str(parameters(published("04_grpo_training"))["N_EVAL"]),
        },
    ),
    Claim(
        "04_grpo_training",
        r"Qwen2\.5-7B, (?P<before>\d+)% -> (?P<after>\d+)% held-out\): a small KL weight \((?P<beta>[\d.]+)\) "
        r"with the reference model refreshed every (?P<sync>\d+) steps",
        bespoke,
    ),
    Claim(
        "04_grpo_training",
        r"On its dev set \((?P<n>\d+) tasks, the set it was tuned on\) pass@0\.75 went (?P<before>\d\.\d{3}) -> "
        r"(?P<after>\d\.\d{3}), " + CHANGE,
        kept_dev,
    ),
    Claim("04_grpo_training", r"with fewer calls per task on every set", check=fewer_calls_on_every_set),
    Claim("04_grpo_training", r"where the curve goes after step (?P<step>\d+)", kept_last_step),
    Claim("05_results", r"the test sets (?P<seeds>" + SEEDS + r")\)", check=record_test_seeds),
    Claim(
        "05_results",
        r"its test sets \(seeds (?P<seeds>" + SEEDS + r"), evaluated once",
        check=record_test_seeds,
    ),
    Claim("05_results", r"`SHIPPED_SEED` \((?P<seed>\d+): the dev set is seed (?P<dev>\d+),", shipped_seeds),
    Claim(
        "05_results",
        r"`cpu-demo`'s (?P<earlier>\d+) SFT steps on smollm2-135m; the shipped one had (?P<shipped>\d+), as "
        r"`cpu-learn` has",
        warm_start_steps,
    ),
    Claim("05_results", r"0 right of (?P<n>\d+) still allows up to (?P<pct>[\d.]+)%", bfcl_exact),
    Claim(
        "05_results",
        r"coverage (?P<cb>[\d.]+)% -> (?P<ca>[\d.]+)%, pass@0\.50 (?P<p5b>[\d.]+)% -> (?P<p5a>[\d.]+)%, "
        r"pass@0\.75 (?P<p7b>[\d.]+)% -> (?P<p7a>[\d.]+)%",
        scale,
    ),
    Claim("05_results", r"binary BFCL reward: (?P<b>\d+)% -> (?P<a>\d+)%", bespoke_05),
    Claim(
        "05_results",
        r"Qwen3-4B (?P<q4b>[\d.]+) -> (?P<q4a>[\d.]+) \((?P<headline>\+[\d.]+), the headline gain\), "
        r"Qwen3-8B (?P<q8b>[\d.]+) -> (?P<q8a>[\d.]+), Qwen2\.5-7B (?P<q25b>[\d.]+) -> (?P<q25a>[\d.]+), "
        r"Granite-4\.1-8B (?P<gb>[\d.]+) -> (?P<ga>[\d.]+); tau2-bench average (?P<tq4>\+[\d.]+), "
        r"(?P<tq8>\+[\d.]+), (?P<tq25>\+[\d.]+), (?P<tg>\+[\d.]+) points",
        prove,
    ),
    Claim(
        "05_results",
        r"to GRPO step (?P<last>\d+), a checkpoint evaluated every (?P<every>\d+) steps\. Flat to step "
        r"(?P<flat>\d+) \(the CPU hour holds (?P<hour>\d+) steps\), a gain outside the CI from step (?P<gain>\d+)",
        check=long_curve_check,
    ),
    Claim("04_grpo_training", r"(?P<level>\d+)% (?:bootstrap )?(?:interval|CI)", confidence, every=True),
    Claim("05_results", r"(?P<level>\d+)% (?:bootstrap )?(?:interval|CI)", confidence, every=True),
    Claim(
        "README",
        r"about (?P<lo>0\.\d\d)-(?P<hi>0\.\d\d) of held-out tasks pass at 0\.75 after it, on the shipped run's "
        r"dev and test sets and notebook 05's fresh set",
        check=readme_range,
    ),
    Claim(
        "README",
        r"(?P<before>0\.\d{3}) on the dev set re-graded\).*\(dev set re-graded: (?P<diff>[+-]0\.\d{3})\)",
        regraded_dev,
    ),
    Claim(
        "README",
        r"by (?P<mean>[+-]0\.\d{3}) on average over the run's (?P<n>\w+) test sets re-graded",
        regraded_tests,
    ),
    Claim("README", r"not yet by the (?P<target>\+0\.\d+) the kit aims for", kit_target),
    Claim(
        "README",
        r"then GRPO, (?P<n_seeds>\w+) training seeds, (?P<n_tasks>\d+) test tasks\).*?in-template "
        r"(?P<s_diff>[+-]\d\.\d{3}) \[(?P<s_lo>[+-]\d\.\d{3}), (?P<s_hi>[+-]\d\.\d{3})\]\) but not greedily "
        r"\((?P<g_diff>[+-]\d\.\d{3}) \[(?P<g_lo>[+-]\d\.\d{3}), (?P<g_hi>[+-]\d\.\d{3})\].*?not the "
        r"(?P<target>\+0\.\d+) the kit aims for",
        lambda: {**shipped_claim_in_template(), **kit_target()},
    ),
]


def all_claims() -> list[Claim]:
    return CLAIMS + kept_test_claims()


@pytest.mark.parametrize("claim", all_claims(), ids=lambda c: c.id)
def test_the_prose_says_what_the_outputs_and_records_show(claim: Claim):
    text = prose_of(claim.where)
    matches = list(re.finditer(claim.pattern, text))
    assert matches, (
        f"{claim.where}: no prose matches {claim.pattern!r}: the sentence changed, update this claim"
    )
    assert claim.every or len(matches) == 1, f"{claim.where}: {claim.pattern!r} matches {len(matches)} times"
    for m in matches:
        if claim.expected is not None:
            expected = claim.expected()
            said = {k: m.group(k) for k in expected}
            assert said == expected, f"{claim.where} says {m.group(0)!r}; the outputs/records give {expected}"
        if claim.check is not None:
            claim.check(m)


@pytest.mark.parametrize("where", ["04_grpo_training", "05_results", "README"])
def test_every_quoted_result_is_checked(where):
    """A number that can change, typed into the prose, is checked by a claim above or printed by the
    notebook instead; a new one here fails until one of the two is done."""
    text = prose_of(where)
    masked = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), text)  # knobs and commands in backticks
    covered = [m.span() for c in all_claims() if c.where == where for m in re.finditer(c.pattern, text)]
    loose = [
        f"{q.group()!r} in ...{text[max(0, q.start() - 60) : q.end() + 20]}..."
        for q in QUOTED.finditer(masked)
        if not any(a <= q.start() and q.end() <= b for a, b in covered)
    ]
    assert not loose, "quoted results no claim checks:\n" + "\n".join(loose)


@pytest.mark.parametrize("where", ["01_mcp_environments", "02_rubric_data", "03_rewards"])
def test_the_other_notebooks_quote_no_results(where):
    text = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), prose(source(where)))
    assert [q.group() for q in QUOTED.finditer(text)] == []


def test_notebook_05_shows_the_run_notebook_04_shows():
    """05 reads 04's run folder: their copies must come from one `make docs-notebooks`, or the reader sees
    two runs under one name (+0.000 in 04's copy, +0.033 in 05's)."""
    nb04, nb05 = published("04_grpo_training"), published("05_results")
    run04 = str(Path(parameters(nb04)["OUT_DIR"]) / "run")
    marker = 'runs = {}  # suite -> {"before"'
    shown = re.search(r"notebook 04's run (\S+): base model", "\n".join(cell_outputs(nb05, marker)))
    assert shown, "notebook 05's copy does not name the run it shows"
    assert shown.group(1) == run04, f"05's copy shows {shown.group(1)}, 04's copy ran {run04}"
    # 04's comparison: metric -> before, after, diff, ci_low, ci_high, outside_ci
    [comparison] = [t for t in cell_outputs(nb04, 'if "comparison" in summary') if "outside_ci" in t]
    diff04 = float(printed_frame(comparison)[PRIMARY][2])
    assert diff04 == pytest.approx(float(paired_rows(nb05, marker)[PRIMARY]["diff"]), abs=5e-4)


def test_notebook_05_says_which_way_bfcl_transfer_went():
    """Every BFCL signal GRPO moved outside its interval is named in the verdict line under the tables,
    on the side the numbers put it (before: the copy showed well-formed first calls 0.93 -> 0.73 and the
    finish rate 0.83 -> 0.67, outside their CIs, and no sentence said so)."""
    nb = published("05_results")
    paired = paired_rows(nb, "bfcl_sides, bfcl_model = None")
    moved = {metric: float(row["diff"]) for metric, row in paired.items() if row["outside_ci"] == "True"}
    if not moved:
        pytest.skip("no BFCL signal moved outside its interval in this copy")
    [verdict] = [c for c in nb.cells if c.cell_type == "code" and "The transfer in words" in c.source] or [
        None
    ]
    assert verdict is not None, "notebook 05's copy has no cell saying which way BFCL transfer went"
    lines = "\n".join(outputs(verdict)).splitlines()
    better_when = {"accuracy": 1, "first_call_well_formed": 1, "finish_rate": 1, "tool_failure_rate": -1}
    for metric, diff in moved.items():
        line = next((ln.strip() for ln in lines if f" {metric} " in f" {ln.split(':', 1)[-1]}"), "")
        assert line, f"{metric} moved ({diff:+.3f}) and the verdict does not name it: {lines}"
        side = line.split(":")[0]
        if metric in better_when:
            assert side == ("better" if diff * better_when[metric] > 0 else "worse"), line
        else:
            assert side == "changed", line
    worse = any(ln.strip().startswith("worse:") for ln in lines)
    better = any(ln.strip().startswith("better:") for ln in lines)
    assert ("made the transfer worse" in lines[0]) == (worse and not better), lines[0]


@pytest.mark.parametrize(
    "stem",
    [p.stem for p in notebooks.find_notebooks()],
)
def test_the_published_copy_carries_its_source_s_prose(stem):
    """The claims above read the sources; a published copy from before a prose change still says the old
    thing until `make docs-notebooks` runs again."""
    own = [c.source for c in source(stem).cells[1:] if c.cell_type == "markdown"]
    shown = [c.source for c in published(stem).cells[1:] if c.cell_type == "markdown"]
    assert shown == own, (
        f"docs/notebooks/{stem}.ipynb: its prose is behind notebooks/{stem}.py: run `make docs-notebooks`"
    )
