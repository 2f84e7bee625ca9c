"""``rollout.tool_format``: the tools described as the template's JSON schemas (``json``, the default),
one line per tool (``compact``) or that line and one per argument description (``compact_args``). Each format names every tool and argument; the choice reaches the
sampled prompts and the SFT rows alike, which render the same system message."""

from __future__ import annotations

import dataclasses

import pytest

from toolkit.agent.chat import ChatFormat
from toolkit.agent.loop import FINISH_SPEC, RolloutConfig, rollout
from toolkit.agent.testing import NOTES_TOOLS, ScriptedPolicy, check_token_exact, fake_opener, turns
from toolkit.agent.tool_text import signature, tools_block, type_text
from toolkit.aio import run_sync
from toolkit.records import GoldCall, Task
from toolkit.toolbox import ToolSpec
from toolkit.train.config import RecipeError, load_recipe, with_overrides
from toolkit.train.sft import warm_start_rows

ODD = ToolSpec(
    "odd_shapes",
    "A tool\nwith every shape\n of argument.",
    {
        "type": "object",
        "properties": {
            "status": {"title": "Status", "enum": ["open", "closed"], "type": "string"},
            "ids": {"type": "array", "items": {"type": "string"}},
            "modes": {"type": "array", "items": {"enum": ["a", "b"]}},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "where": {"$ref": "#/$defs/Place"},
            "free": {},
        },
        "required": ["status", "ids"],
        "$defs": {
            "Place": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["city"],
            }
        },
    },
)


@pytest.fixture(scope="module")
def tok():
    from toolkit.models import load_tokenizer

    return load_tokenizer("smollm2-135m")


def test_compact_signature_writes_each_argument_with_its_type():
    assert signature(ODD) == (
        'odd_shapes(status: "open"|"closed", ids: string[], modes?: ("a"|"b")[], maybe?: integer, '
        "where?: {city: string, zip?: string}, free?: any) - A tool with every shape of argument."
    )
    assert signature(FINISH_SPEC) == (
        "finish(answer: string) - Call this when the request is complete, with your final answer to the user."
    )
    assert type_text({"type": ["string", "null"]}) == "string|null"
    assert (
        signature(NOTES_TOOLS[0], arg_descriptions=True) == "add(a: integer, b: integer) - Add two integers."
    )
    assert signature(FINISH_SPEC, arg_descriptions=True).endswith(
        "user.\n  answer: The final answer to the user."
    )


def _cpu_demo_specs() -> list[ToolSpec]:
    """The tools of the first 30 cpu-demo dev tasks, as their MCP servers list them."""
    from toolkit.envs import open_episode
    from toolkit.train.pipeline import synthesize_tasks

    recipe = load_recipe("cpu-demo")

    async def listed(task: Task) -> list[ToolSpec]:
        async with open_episode(task) as box:
            return [s for s in await box.list_tools() if s.name in task.tools]

    import tempfile
    from pathlib import Path

    from toolkit.records import read_jsonl

    with tempfile.TemporaryDirectory() as folder:
        _, eval_file = synthesize_tasks({**recipe.synth, "n": 20, "n_eval": 30}, Path(folder))
        tasks = read_jsonl(eval_file, Task)
    specs: dict[str, ToolSpec] = {}
    for task in tasks:
        specs.update({s.name: s for s in run_sync(listed(task))})
    return [*specs.values(), FINISH_SPEC]


@pytest.mark.parametrize("tool_format", ["json", "compact", "compact_args"])
def test_each_format_renders_every_tool_and_argument_name(tok, tool_format):
    specs = [*_cpu_demo_specs(), ODD, *NOTES_TOOLS]
    assert len(specs) > 20
    fmt = ChatFormat(tok)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    if tool_format == "json":
        text = fmt.prompt_text(messages, [s.to_openai(compact=True) for s in specs])
    else:
        text = fmt.prompt_text(
            [{"role": "system", "content": "S" + tools_block(specs, tool_format)}, messages[1]], None
        )
    for spec in specs:
        assert f'"name": "{spec.name}"' in text if tool_format == "json" else f"\n{spec.name}(" in text
        for arg in spec.input_schema.get("properties") or {}:
            assert f'"{arg}":' in text if tool_format == "json" else f"{arg}: " in text or f"{arg}?: " in text
    for arg in ("city", "zip"):  # the $ref'd object's fields
        assert arg in text
    # compact_args keeps the argument descriptions (id formats, units); compact drops them
    assert ("  staff_id: Staff id, e.g. 'st-001'." in text) == (tool_format == "compact_args")


def _task() -> Task:
    return Task(
        id="t",
        split="train",
        prompt="Add 2 and 3.",
        servers=["calc", "notes"],
        tools=["add", "save_note", "dump"],
        seed=0,
        gold=[GoldCall("add", {"a": 2, "b": 3})],
        answers={"sum": 5},
        metadata={"kind": "lookup"},
    )


@pytest.mark.parametrize("tool_format", ["json", "compact", "compact_args"])
def test_the_format_reaches_sampled_prompts_and_sft_rows(tok, tool_format):
    loop = RolloutConfig(max_turns=3, max_new_tokens=64, max_context_tokens=4096, tool_format=tool_format)
    policy = ScriptedPolicy(
        turns('<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'), tok
    )
    (sampled,) = rollout([_task()], policy, loop, open_episode=fake_opener())
    check_token_exact(sampled, tok)
    prompt = tok.decode(sampled.prompt_ids)
    compact_line = "add(a: integer, b: integer) - Add two integers."
    assert (compact_line in prompt) == (tool_format != "json")
    assert ('"parameters"' in prompt) == (tool_format == "json")
    assert sampled.metadata["tool_format"] == tool_format
    (row,), fit = warm_start_rows([_task()], loop, tok, open_episode=fake_opener())
    assert fit.total("dropped") == 0
    # the SFT row reads the very prompt the sampler sends (up to the generation prompt)
    header = ChatFormat(tok).encode(ChatFormat(tok).generation_prompt)
    assert sampled.prompt_ids[-len(header) :] == header
    assert row["input_ids"][: len(sampled.prompt_ids) - len(header)] == sampled.prompt_ids[: -len(header)]


def test_compact_prompts_are_shorter_and_the_default_is_unchanged(tok):
    assert RolloutConfig().tool_format == "json"
    assert load_recipe("cpu-demo").loop_config().tool_format == "json"
    lengths = {}
    for tool_format in ("json", "compact", "compact_args"):
        loop = RolloutConfig(max_turns=1, compact_schemas=True, tool_format=tool_format)
        (traj,) = rollout([_task()], ScriptedPolicy(turns("hi"), tok), loop, open_episode=fake_opener())
        lengths[tool_format] = len(traj.prompt_ids)
    assert lengths["compact"] < 0.8 * lengths["json"] and lengths["compact_args"] < lengths["json"]


def test_an_unknown_tool_format_is_refused():
    with pytest.raises(ValueError, match="tool_format must be one of json, compact, compact_args"):
        RolloutConfig(tool_format="yaml")
    with pytest.raises(RecipeError, match="rollout.tool_format"):
        with_overrides(load_recipe("cpu-demo"), {"rollout.tool_format": "yaml"})
    assert dataclasses.replace(RolloutConfig(), tool_format="compact").tool_format == "compact"
