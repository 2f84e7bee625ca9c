"""Tool-call parsing and argument validation: the formats small models actually produce."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.agent.parsing import format_call, parse_turn
from toolkit.envs.schema import check_arguments, coerce


def calls_of(text: str) -> list[tuple[str, dict | None, bool]]:
    return [(c.name, c.arguments, c.error is None) for c in parse_turn(text).calls]


def test_qwen_format_single_call():
    text = '<tool_call>\n{"name": "get_ticket", "arguments": {"ticket_id": 48}}\n</tool_call>'
    turn = parse_turn(text)
    assert turn.content == ""
    assert calls_of(text) == [("get_ticket", {"ticket_id": 48}, True)]


def test_several_calls_and_text_around():
    text = (
        "Let me look.\n<tool_call>\n"
        '{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>'
        " done"
    )
    turn = parse_turn(text)
    assert [c.name for c in turn.calls] == ["a", "b"]
    assert turn.content == "Let me look.\n\n done"


def test_plain_answer_has_no_calls():
    turn = parse_turn("  The answer is 42.  ")
    assert turn.calls == [] and turn.content == "The answer is 42."


def test_trailing_text_inside_block():
    assert calls_of('<tool_call>{"name": "a", "arguments": {"x": 1}} I hope this helps</tool_call>') == [
        ("a", {"x": 1}, True)
    ]


def test_missing_closing_tag_and_missing_brace():
    assert calls_of('<tool_call>\n{"name": "a", "arguments": {"x": 1}}') == [("a", {"x": 1}, True)]
    assert calls_of('<tool_call>{"name": "a", "arguments": {"x": 1}') == [("a", {"x": 1}, True)]
    two = '<tool_call>{"name": "a", "arguments": {}}<tool_call>{"name": "b", "arguments": {}}'
    assert [c[0] for c in calls_of(two)] == ["a", "b"]


def test_single_quotes_and_python_literals():
    assert calls_of("<tool_call>{'name': 'a', 'arguments': {'flag': True, 'v': None}}</tool_call>") == [
        ("a", {"flag": True, "v": None}, True)
    ]


def test_python_literals_json_cannot_hold_are_an_error_not_a_call():
    """Run 25 (docs/cpu-proof) stopped at GRPO step 8 when a sampled call's arguments held a Python set and
    the rollout log could not write it: such a call goes back to the model as a bad_json error."""
    for text, what in [
        ("{'name': 'tag', 'arguments': {'labels': {'a', 'b'}}}", "a set"),
        ("{'name': 'tag', 'arguments': {'x': [1, b'y']}}", "a bytes"),
        ("{'name': 'tag', 'arguments': {1: 'a', 'b': 2}}", "a non-string key"),
    ]:
        (call,) = parse_turn(f"<tool_call>{text}</tool_call>").calls
        assert call.arguments is None and call.error == f"bad_json: arguments must be JSON values, got {what}"
    (ok,) = parse_turn("<tool_call>{'name': 'a', 'arguments': {'xs': (1, 2)}}</tool_call>").calls
    assert ok.error is None and json.loads(json.dumps(ok.arguments)) == {"xs": [1, 2]}


def test_code_fence_inside_block_and_bare_fenced_call():
    fenced = '<tool_call>\n```json\n{"name": "a", "arguments": {"x": "y"}}\n```\n</tool_call>'
    assert calls_of(fenced) == [("a", {"x": "y"}, True)]
    bare = '```json\n{"name": "a", "arguments": {"x": 2}}\n```'
    assert calls_of(bare) == [("a", {"x": 2}, True)]
    assert calls_of('{"name": "a", "parameters": {"x": 2}}') == [("a", {"x": 2}, True)]
    # JSON that is not a call stays an answer
    assert parse_turn('{"answer": 5}').calls == []


def test_arguments_as_json_string_and_key_variants():
    assert calls_of('<tool_call>{"name": "a", "arguments": "{\\"x\\": 3}"}</tool_call>') == [
        ("a", {"x": 3}, True)
    ]
    assert calls_of('<tool_call>{"name": "a", "parameters": {"x": 3}}</tool_call>') == [("a", {"x": 3}, True)]
    wrapped = '<tool_call>{"type": "function", "function": {"name": "a", "arguments": {"x": 3}}}</tool_call>'
    assert calls_of(wrapped) == [("a", {"x": 3}, True)]
    assert calls_of(
        '<tool_call>[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]</tool_call>'
    ) == [
        ("a", {}, True),
        ("b", {}, True),
    ]
    assert calls_of('<tool_call>{"name": "a"}</tool_call>') == [("a", {}, True)]


def test_unrepairable_calls_become_errors_with_the_name_when_legible():
    (call,) = parse_turn('<tool_call>{"name": "get_ticket", "arguments": {ticket_id: 4</tool_call>').calls
    assert call.name == "get_ticket" and call.arguments is None and call.error.startswith("bad_json")
    (call,) = parse_turn("<tool_call>not json at all</tool_call>").calls
    assert call.error.startswith("bad_json") and call.name == ""
    (call,) = parse_turn('<tool_call>{"arguments": {}}</tool_call>').calls
    assert "name" in call.error
    (call,) = parse_turn('<tool_call>{"name": "a", "arguments": [1, 2]}</tool_call>').calls
    assert call.arguments is None and "object" in call.error


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>', "add"),  # no opening tag
        ('<TOOL_CALL>{"name": "add", "arguments": {"a": 1}}</TOOL_CALL>', "add"),
        ('<tool-call>{"name": "add", "arguments": {"a": 1}}</tool-call>', "add"),
        ('<tool_calls>[{"name": "add", "arguments": {}}]</tool_calls>', "add"),
        ('<function=add>{"a": 1, "b": 2}</function>', "add"),
        ('[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}}]', "add"),
        ("<|python_tag|>add.call(a=1, b=2)", ""),
        ('Let me check. {"name": "add", "arguments": {"a": 1}} and then answer.', "add"),
        ('Sure!\n```json\n{"name": "add" "arguments": {}}\n```', "add"),  # missing comma, fenced
        ("I'll call {'name': 'add', 'parameters': {'a': 1}} now", "add"),
    ],
)
def test_call_attempts_in_other_formats_go_back_to_the_model_as_errors(text, name):
    turn = parse_turn(text)
    (call,) = turn.calls
    assert call.name == name and call.arguments is None
    assert call.error.startswith("bad_json: tool call not recognised")
    assert '<tool_call>{"name": ..., "arguments": {...}}</tool_call>' in call.error


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        "I made two tool calls and both worked; the ticket is closed.",
        "Use a <b>bold</b> tag, or call the function f(x) = x + 1 with x = 2.",
        'The file says {"name": "Alice", "age": 30}.',
        'Tool results: {"status": "ok", "input": "abc", "name": "report"}',
        "std::function<int(int)> f; then <functions> in XML and [TOOL] in brackets.",
        "The function's name and its arguments are described in the manual.",
        "",
    ],
)
def test_plain_prose_stays_an_answer(text):
    turn = parse_turn(text)
    assert turn.calls == [] and turn.content == text.strip()


def test_format_call_round_trips():
    text = format_call("save", {"text": 'quote " and ü', "n": [1, 2]})
    assert calls_of(text) == [("save", {"text": 'quote " and ü', "n": [1, 2]}, True)]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_string_crashes_the_parser(text):
    turn = parse_turn(text)
    assert isinstance(turn.content, str)
    for call in turn.calls:
        assert isinstance(call.name, str)
        assert (call.arguments is None) == (call.error is not None)
        assert call.arguments is None or isinstance(call.arguments, dict)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=20),
    body=st.one_of(
        st.text(alphabet="{}[]\"':,<>/ abntrue0123456789\\", max_size=60),
        st.builds(lambda n, a: json.dumps({"name": n, "arguments": a}), st.text(max_size=8), _json_values),
    ),
    closed=st.booleans(),
)
def test_no_tool_call_like_string_crashes_the_parser(prefix, body, closed):
    text = prefix + "<tool_call>" + body + ("</tool_call>" if closed else "")
    for call in parse_turn(text).calls:
        assert call.arguments is None or isinstance(call.arguments, dict)


# --------------------------------------------------------------------------------------------------
# schema validation and relaxed coercion
# --------------------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
    "required": ["n"],
}


def test_relaxed_validation_coerces_obvious_mistakes():
    args, error = check_arguments(
        {"n": "3", "x": "2.5", "flag": "true", "name": 7, "tags": '["a", "b"]', "maybe": "4"},
        SCHEMA,
        relaxed=True,
    )
    assert error is None
    assert args == {"n": 3, "x": 2.5, "flag": True, "name": "7", "tags": ["a", "b"], "maybe": 4}


def test_strict_validation_reports_the_violation():
    args, error = check_arguments({"n": "3"}, SCHEMA, relaxed=False)
    assert args == {"n": "3"} and error is not None and "n" in error


def test_relaxed_validation_still_reports_what_it_cannot_fix():
    _, error = check_arguments({"n": "three"}, SCHEMA, relaxed=True)
    assert error is not None and "three" in error
    _, missing = check_arguments({}, SCHEMA, relaxed=True)
    assert missing is not None and "'n' is a required property" in missing


def test_validating_a_call_skips_the_slow_rfc3987_syntax_import():
    """A fresh process validates a call without importing rfc3987_syntax (its grammar costs about 2 s a
    process: every command and test subprocess that runs an episode paid it)."""
    import subprocess
    import sys

    code = (
        "import sys; from toolkit.envs.schema import check_arguments; "
        "assert check_arguments({'n': 'x'}, {'properties': {'n': {'type': 'integer'}}}, relaxed=False)[1]; "
        "assert 'rfc3987_syntax' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_coerce_leaves_valid_values_alone():
    value = {"n": 1, "flag": False, "tags": ["x"]}
    assert coerce(value, SCHEMA) == value
    assert coerce(True, {"type": "integer"}) is True  # bool is not silently turned into 1


@settings(max_examples=150, deadline=None)
@given(args=st.dictionaries(st.sampled_from(list(SCHEMA["properties"]) + ["zz"]), _json_values, max_size=5))
def test_validation_never_raises(args):
    for relaxed in (True, False):
        checked, error = check_arguments(args, SCHEMA, relaxed=relaxed)
        assert isinstance(checked, dict) and (error is None or isinstance(error, str))
