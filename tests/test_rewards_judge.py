"""LLM-judge grader against fake endpoints (httpx mock transport and the in-process stand-in server):
good, malformed, incomplete and failing replies, retries, the cache, key hygiene, calibration."""

import json

import httpx
import pytest

from toolkit.rewards import get_reward
from toolkit.rewards.judge import JudgeGrader, parse_verdicts
from toolkit.rewards.rubric import RubricReward
from toolkit.rewards.standin import StandInJudge
from toolkit.study.calibration import calibration_report
from toolkit.study.examples import example_gold, helpdesk_task
from toolkit.study.perturb import perturb

SECRET = "sk-test-not-a-real-key-12345"


def reply(content, status=200):
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}  # fmt: skip
    return httpx.Response(status, json=body if status == 200 else {"error": {"message": "boom"}})


def items_of(request):
    user = json.loads(request.content)["messages"][1]["content"]
    return json.loads(user.split("RUBRIC ITEMS (JSON):\n", 1)[1])


def all_pass(request):
    return reply(
        json.dumps(
            {"verdicts": [{"id": it["id"], "verdict": "pass", "reason": "ok"} for it in items_of(request)]}
        )
    )


def grader(handler, monkeypatch, **kw):
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    seen = []

    def wrapped(request):
        seen.append(request)
        return handler(request, len(seen))

    client = httpx.Client(transport=httpx.MockTransport(wrapped))
    g = JudgeGrader(base_url="http://judge.test/v1", model="m", api_key_env="JUDGE_TEST_KEY",
                    backoff=0.0, http_client=client, **kw)  # fmt: skip
    return g, seen


def test_good_replies_batching_and_cache(monkeypatch, tmp_path):
    g, seen = grader(lambda r, n: all_pass(r), monkeypatch, batch_size=4, cache_path=tmp_path / "cache.jsonl")
    task = helpdesk_task()  # 6 items -> 2 requests of 4 + 2
    res = RubricReward(grader=g)(task, example_gold(task))
    assert res.score == 1.0 and res.details["ungraded"] == 0
    assert len(seen) == 2 and [len(items_of(r)) for r in seen] == [4, 2]
    assert seen[0].headers["authorization"] == f"Bearer {SECRET}"  # key from the env var ...
    RubricReward(grader=g)(task, example_gold(task))
    assert len(seen) == 2 and g.stats["cache_hits"] == 2  # ... replies cached in memory
    g2, seen2 = grader(
        lambda r, n: all_pass(r), monkeypatch, batch_size=4, cache_path=tmp_path / "cache.jsonl"
    )
    assert RubricReward(grader=g2)(task, example_gold(task)).score == 1.0 and not seen2  # ... and on disk
    stored = (tmp_path / "cache.jsonl").read_text()
    assert SECRET not in stored and SECRET not in repr(g) and SECRET not in json.dumps(res.details)


def test_malformed_replies_are_retried_then_ungraded(monkeypatch):
    g, seen = grader(lambda r, n: reply("Sure! Everything passes."), monkeypatch, max_retries=2)
    task = helpdesk_task()
    res = RubricReward(grader=g)(task, example_gold(task))
    assert len(seen) == 3 and g.stats["malformed"] == 3
    assert res.details["ungraded"] == 6 and res.details["unscorable"] is True and res.score == 0.0


def test_server_errors_retry_then_succeed(monkeypatch):
    g, seen = grader(lambda r, n: reply("", 503) if n < 3 else all_pass(r), monkeypatch, max_retries=3)
    task = helpdesk_task()
    assert RubricReward(grader=g)(task, example_gold(task)).score == 1.0
    assert len(seen) == 3 and g.stats["http_errors"] == 2


def test_client_errors_are_not_retried(monkeypatch):
    g, seen = grader(lambda r, n: reply("", 400), monkeypatch, max_retries=3)
    task = helpdesk_task()
    res = RubricReward(grader=g)(task, example_gold(task))
    assert len(seen) == 1 and res.details["ungraded"] == 6


def test_transport_failure_never_raises(monkeypatch):
    def down(request, n):
        raise httpx.ConnectError("connection refused")

    g, seen = grader(down, monkeypatch, max_retries=1)
    task = helpdesk_task()
    res = RubricReward(grader=g).batch([task, task], [example_gold(task)] * 2)
    assert [r.details["ungraded"] for r in res] == [6, 6] and g.stats["transport_errors"] == 4


def test_incomplete_and_invalid_items(monkeypatch):
    def partial(request, n):
        its = items_of(request)
        rows = [{"id": its[0]["id"], "verdict": "pass"}, {"id": its[1]["id"], "verdict": "maybe"}]
        rows += [{"id": it["id"], "verdict": "fail"} for it in its[2:4]]
        return reply("```json\n" + json.dumps({"verdicts": rows}) + "\n```")

    g, seen = grader(partial, monkeypatch, max_retries=0)
    task = helpdesk_task()  # r1 pass, r2 invalid, r3 r4 fail, r5 r6 missing
    res = RubricReward(grader=g)(task, example_gold(task))
    assert res.details["ungraded"] == 3  # r2, r5 (essential) and r6 (optional)
    assert res.score == pytest.approx(1 / 3)  # r1 of the graded essentials r1, r3, r4


def test_parse_verdicts_strictness():
    assert parse_verdicts('{"verdicts": [{"id": "a", "verdict": "PASS"}]}', ["a"]) == {"a": ("pass", "")}
    assert parse_verdicts('[{"id": "a", "verdict": "partial", "reason": "half"}]', ["a"]) == {
        "a": ("partial", "half")
    }
    assert parse_verdicts("pass", ["a"]) is None
    assert parse_verdicts('{"verdicts": "all good"}', ["a"]) is None
    assert parse_verdicts('{"verdicts": [{"id": "zzz", "verdict": "pass"}]}', ["a"]) == {}


def test_missing_configuration_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("MCP_RL_JUDGE_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="base_url"):
        JudgeGrader(model="m")
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_KEY_VAR"):
        JudgeGrader(base_url="http://x/v1", model="m", api_key_env="NO_SUCH_KEY_VAR")


def test_standin_server_end_to_end_and_calibration():
    task = helpdesk_task()
    gold = example_gold(task)
    wrong = perturb(task, gold, ["wrong_answer"])
    with StandInJudge() as judge:
        reward = get_reward("rubric-judge", **judge.judge_config())
        assert reward.name == "rubric-judge"
        scores = [r.score for r in reward.batch([task, task], [gold, wrong])]
        report = calibration_report([task, task], [gold, wrong], reward.grader)
    assert scores == [1.0, pytest.approx(3 / 5)]  # r3 (name) and r4 (date) evidence missing from the answer
    assert report["overall"]["n"] == 12 and report["ungraded"] == {"judge": 0, "reference": 0}
    conf = report["confusion"]
    assert sum(conf.values()) == 12
    assert report["overall"]["accuracy"] == pytest.approx(
        (conf["judge_pass_ref_pass"] + conf["judge_fail_ref_fail"]) / 12
    )
    assert set(report["per_category"]) == {
        "tool_selection",
        "query_construction",
        "multi_step_planning",
        "answer_correctness",
    }


def test_score_cli_calibrate_with_standin(tmp_path, capsys):
    from toolkit import cli
    from toolkit.records import write_jsonl

    task = helpdesk_task()
    gold = example_gold(task)
    trajs = [
        gold,
        perturb(task, gold, ["wrong_answer"]),
        perturb(task, gold, ["drop_call", "drop_call"], seed=2),
    ]
    write_jsonl(tmp_path / "t.jsonl", [task])
    write_jsonl(tmp_path / "r.jsonl", trajs)
    args = ["score", "--reward", "rubric-judge", "--tasks", str(tmp_path / "t.jsonl"),
            "--trajectories", str(tmp_path / "r.jsonl"), "--judge-standin", "--calibrate", "--json"]  # fmt: skip
    assert cli.main(args) == 0
    out = json.loads(capsys.readouterr().out)
    cal = out["calibration"]
    assert cal["overall"]["n"] == 3 * len(task.rubric)
    assert sum(cal["confusion"].values()) == cal["overall"]["n"]
    assert out["trajectories"][0]["score"] == 1.0
    assert cli.main(["score", "--reward", "rubric", "--tasks", str(tmp_path / "t.jsonl"),
                     "--trajectories", str(tmp_path / "r.jsonl"), "--calibrate"]) == 1  # fmt: skip


def test_local_model_judge_server_path_with_fake_generator():
    from toolkit.rewards.local_judge import LocalModelJudge

    def echo_pass(messages):  # a "model" that answers every item with pass
        user = messages[-1]["content"]
        ids = [it["id"] for it in json.loads(user.split("RUBRIC ITEMS (JSON):\n", 1)[1])]
        return json.dumps({"verdicts": [{"id": i, "verdict": "pass"} for i in ids]})

    task = helpdesk_task()
    with LocalModelJudge(generate=echo_pass) as server:
        assert get_reward("rubric-judge", **server.judge_config())(task, example_gold(task)).score == 1.0
    with LocalModelJudge(generate=lambda m: "The trajectory looks fine to me.") as server:
        res = get_reward("rubric-judge", max_retries=1, backoff=0.0, **server.judge_config())(
            task, example_gold(task)
        )
        assert res.details["ungraded"] == 6 and server.requests == 2
    with LocalModelJudge(
        generate=lambda m: 1 / 0
    ) as server:  # the model crashes: HTTP 500, retried, ungraded
        reward = get_reward("rubric-judge", max_retries=2, backoff=0.0, **server.judge_config())
        assert reward(task, example_gold(task)).details["ungraded"] == 6 and server.requests == 3
        assert reward.grader.stats["http_errors"] == 3
