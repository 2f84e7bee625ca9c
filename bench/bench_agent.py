"""Episodes/s and model tokens/s of the kit's rollout loop vs TRL's built-in tool loop, on CPU.

Both loops drive the same model, prompts and budgets. A real model that has not been trained for
tool use never calls a tool, so each model turn is *forced* to a fixed script (``tool_turns`` calls
to ``calculate`` and then a plain answer) by a logits processor installed on ``model.generate``:
every token still costs a full forward pass at the real batch size, only the choice of token is
scripted. Both loops therefore do the same model work and the same number of tool round trips.

- kit: ``toolkit.agent.loop.run_episodes`` with ``TransformersPolicy``; tools over MCP on the
  episode's isolated world (``toolkit.envs.open_episode``, calculator server).
- TRL: ``GRPOTrainer(tools=[calculate])._generate`` (trl 1.15, the pinned version), the path ``GRPOTrainer`` takes for
  every batch: ``_generate_single_turn`` then ``_tool_call_loop``; the tool is a plain Python function.

"Outside generation" is the share of the rollout's wall time not spent inside ``model.generate``
(template rendering, parsing, tool calls, bookkeeping), measured the same way for both.

    python -m bench.bench_agent                                  # smollm2-135m, 16 episodes, 3 tool turns
    python -m bench.bench_agent --model tiny-random --episodes 8  # seconds; overhead-dominated
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from typing import Any

SYSTEM = "You are a calculator assistant. Use the calculate tool for arithmetic, then answer."


class ForcedScript:
    """Wraps ``model.generate``: forces each model turn to the script and times generate itself."""

    def __init__(self, model: Any, tokenizer: Any, tool_turns: int):
        from transformers import LogitsProcessorList

        self.model, self.tokenizer = model, tokenizer
        self.generate_s = 0.0
        self.calls = 0
        header = tokenizer("<|im_start|>assistant", add_special_tokens=False)["input_ids"]
        self.header = tuple(header)
        self.scripts = [self._ids(_tool_call(t)) for t in range(tool_turns)] + [
            self._ids("The results are in.")
        ]
        original = model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            processors = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
            processors.append(_Forcer(self))
            start = time.perf_counter()
            try:
                return original(*args, logits_processor=processors, **kwargs)
            finally:
                self.generate_s += time.perf_counter() - start
                self.calls += 1

        model.generate = generate

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]

    def turn_of(self, row: list[int]) -> int:
        """Model turns already in the context = assistant headers before the generation prompt."""
        n, h = 0, self.header
        for i in range(len(row) - len(h) + 1):
            if tuple(row[i : i + len(h)]) == h:
                n += 1
        return max(0, n - 1)


class _Forcer:
    def __init__(self, script: ForcedScript):
        self.script = script
        self.start: int | None = None
        self.turns: list[int] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.start is None:
            self.start = input_ids.shape[1]
            self.turns = [self.script.turn_of(row) for row in input_ids.tolist()]
        position = input_ids.shape[1] - self.start
        forced = torch.full_like(scores, float("-inf"))
        for row, turn in enumerate(self.turns):
            ids = self.script.scripts[min(turn, len(self.script.scripts) - 1)]
            forced[row, ids[min(position, len(ids) - 1)]] = 0.0
        return forced


def _tool_call(turn: int) -> str:
    return (
        '<tool_call>\n{"name": "calculate", "arguments": {"expression": "'
        + f"{turn} + 1"
        + '"}}\n</tool_call>'
    )


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: Arithmetic expression, e.g. '(120.5 - 80) * 1.2'.
    """
    left, _, right = expression.partition("+")
    value = float(left) + float(right)
    return json.dumps({"expression": expression, "result": value})


def run_kit(
    model: Any, tokenizer: Any, episodes: int, tool_turns: int, max_new_tokens: int
) -> dict[str, float]:
    from toolkit.agent.loop import RolloutConfig, RolloutStats, rollout
    from toolkit.agent.policies import TransformersPolicy
    from toolkit.records import Task

    tasks = [
        Task(
            id=f"b{i}",
            split="eval",
            prompt=f"Episode {i}: add one to 0, 1 and 2.",
            servers=["calculator"],
            tools=["calculate"],
            seed=0,
        )
        for i in range(episodes)
    ]
    config = RolloutConfig(
        max_turns=tool_turns + 2,
        max_new_tokens=max_new_tokens,
        max_context_tokens=8192,
        finish_tool=False,
        system_prompt=SYSTEM,
        max_batch_size=episodes,
        max_concurrent_episodes=episodes,
    )
    forced = ForcedScript(model, tokenizer, tool_turns)
    policy = TransformersPolicy(model, tokenizer, name="bench")
    rollout(tasks[:1], policy, config)  # warm-up: imports, first MCP server start
    forced.generate_s = 0.0
    stats = RolloutStats()
    start = time.perf_counter()
    trajs = rollout(tasks, policy, config, stats=stats)
    wall = time.perf_counter() - start
    assert all(len(t.calls) == tool_turns and all(c.ok for c in t.calls) for t in trajs), (
        "script not followed"
    )
    del model.generate  # drop the wrapper (an instance attribute)
    return _figures(wall, forced.generate_s, episodes, stats.model_tokens)


def run_trl(
    model: Any,
    tokenizer: Any,
    episodes: int,
    tool_turns: int,
    max_new_tokens: int,
    gradient_checkpointing: bool = True,
) -> dict[str, float]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    prompts = [
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Episode {i}: add one to 0, 1 and 2."},
        ]
        for i in range(episodes)
    ]
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=episodes,
            num_generations=episodes,
            max_completion_length=(tool_turns + 1) * (max_new_tokens + 64),
            max_tool_calling_iterations=tool_turns + 1,
            temperature=1.0,
            report_to="none",
            gradient_checkpointing=gradient_checkpointing,  # GRPOConfig's default is True
            use_cpu=True,
            logging_steps=1,
            save_strategy="no",
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=lambda completions, **_: [0.0] * len(completions),
            args=args,
            train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
            processing_class=tokenizer,
            tools=[calculate],
        )
        trainer.generation_config.max_new_tokens = max_new_tokens  # per model turn, as in the kit's loop
        forced = ForcedScript(trainer.model, tokenizer, tool_turns)

        def rollout_once(batch: list) -> tuple:
            trainer._sync_tool_dicts = [
                {"calculate": calculate} for _ in batch
            ]  # as _generate_and_score does
            trainer._async_tool_dicts = [{} for _ in batch]
            return trainer._generate(batch)

        rollout_once(prompts[:1])  # warm-up
        forced.generate_s = 0.0
        start = time.perf_counter()
        _, completion_ids, tool_mask, completions, *_ = rollout_once(prompts)
        wall = time.perf_counter() - start
    calls = [sum(1 for m in c if m.get("role") == "tool") for c in completions]
    assert calls == [tool_turns] * episodes, f"script not followed: {calls}"
    return _figures(wall, forced.generate_s, episodes, sum(sum(m) for m in tool_mask))


def _figures(wall: float, generate_s: float, episodes: int, model_tokens: int) -> dict[str, float]:
    return {
        "wall_s": wall,
        "episodes_per_s": episodes / wall,
        "model_tokens_per_s": model_tokens / wall,
        "model_tokens": model_tokens,
        "outside_generation": 1.0 - generate_s / wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="smollm2-135m", help="load_policy name (smollm2-135m, tiny-random, ...)"
    )
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--tool-turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--dtype", default=None, help="e.g. bf16")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each loop, alternating; best is kept")
    parser.add_argument(
        "--trl-no-gradient-checkpointing",
        action="store_true",
        help="TRL baseline without GRPOConfig's default",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import torch

    from toolkit.models import load_policy

    torch.manual_seed(0)
    model, tokenizer = load_policy(args.model, dtype=args.dtype)
    budget = (args.episodes, args.tool_turns, args.max_new_tokens)
    runs: dict[str, list[dict[str, float]]] = {"kit": [], "trl": []}
    for repeat in range(args.repeats):  # alternate the order: other load on the machine hits both alike
        order = ("kit", "trl") if repeat % 2 == 0 else ("trl", "kit")
        for name in order:
            if name == "kit":
                runs[name].append(run_kit(model, tokenizer, *budget))
            else:
                runs[name].append(run_trl(model, tokenizer, *budget, not args.trl_no_gradient_checkpointing))
            print(f"  {name} run {repeat + 1}: {runs[name][-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)
    kit, trl = (min(runs[name], key=lambda fig: fig["wall_s"]) for name in ("kit", "trl"))  # best of repeats
    result = {
        "model": args.model,
        "episodes": args.episodes,
        "tool_turns": args.tool_turns,
        "kit": kit,
        "trl": trl,
        "speedup_episodes": kit["episodes_per_s"] / trl["episodes_per_s"],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"model {args.model}, {args.episodes} episodes x {args.tool_turns} tool calls, "
        f"torch threads {torch.get_num_threads()}, best of {args.repeats}"
    )
    print(f"{'loop':6} {'wall s':>8} {'episodes/s':>11} {'tokens/s':>9} {'outside generation':>19}")
    for name, fig in (("kit", kit), ("trl", trl)):
        print(
            f"{name:6} {fig['wall_s']:8.2f} {fig['episodes_per_s']:11.3f} {fig['model_tokens_per_s']:9.1f} "
            f"{fig['outside_generation']:19.1%}"
        )
    print(f"kit / trl episodes per second: {result['speedup_episodes']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
