"""Dynamic K (`--k-schedule` -> `num_speculative_tokens_per_batch_size`): the syntax, vLLM's
own validator rule by rule (tied to the validator recorded from the wheels), the clamp
peagle refuses, the version gate, the p-eagle refusal measured on the real engine, and a
sweep's best K per concurrency turned into a schedule."""

from __future__ import annotations

import json

import pytest

from sm_peagle.errors import SpecError
from sm_peagle.vllm import facts as vf
from sm_peagle.vllm.dynamic_k import (
    P_EAGLE_DYNAMIC_K,
    P_EAGLE_ENGINE_ERRORS,
    VLLM_RULES,
    check_k_schedule,
    parse_k_schedule,
    schedule_from_ranges,
    schedule_text,
)
from sm_peagle.vllm.versions import VllmVersion, covered_versions, dynamic_k_supported
from tests.plan_helpers import make_offline, plan_json, run_cli

V = VllmVersion("0.31.0")


def statuses(schedule, k=7, version=V, mode="eagle3"):
    return [(c.status, c.message) for c in check_k_schedule(schedule, k=k, version=version,
                                                            mode=mode)]  # fmt: skip


def test_parse_and_print():
    sched = parse_k_schedule("1-4:7,5-32:5,33-256:3")
    assert sched == [[1, 4, 7], [5, 32, 5], [33, 256, 3]]
    assert schedule_text(sched) == "1-4:7,5-32:5,33-256:3"
    assert parse_k_schedule(" 1:4 , 2-8:2") == [[1, 1, 4], [2, 8, 2]]
    for bad in ("", "1-4", "a-b:3", "1-4:x", "1-4:3;5-8:2", "-1-4:3"):
        with pytest.raises(SpecError):
            parse_k_schedule(bad)


def test_peagle_rules_are_vllms_validator_in_every_covered_version():
    """Each `raise` condition of validate_and_normalize_dynamic_sd_schedule, as read from
    every wheel with dynamic K, has its rule here; a new or removed one fails this test."""
    seen = 0
    for v in covered_versions():
        detail = vf.by_version(vf.covered()[covered_versions().index(v)])["dynamic_k"]
        assert bool(detail["num_speculative_tokens_per_batch_size"]) == dynamic_k_supported(v)
        for fn in detail["functions"]:
            if fn["function"] != "validate_and_normalize_dynamic_sd_schedule":
                continue
            assert fn["path"] == "vllm/v1/spec_decode/dynamic/utils.py"
            assert {r["condition"] for r in fn["raises"]} == set(VLLM_RULES), v
            seen += 1
    assert seen >= 9  # 0.24.0 .. 0.32.0


@pytest.mark.parametrize(
    "schedule,words",
    [
        ([], "non-empty list"),
        ("1-4:3", "non-empty list"),
        ([[1, 4]], "triple"),
        ([[0, 4, 3]], "positive"),
        ([[1, -2, 3]], "positive"),
        ([[1, 4, 3], [6, 5, 2]], "start must be <= end"),
        ([[1, 4, -1]], "must be >= 0"),
        ([[1, 8, 3], [5, 16, 2]], "overlaps"),
        ([[2, 8, 3]], "must start at 1"),
    ],
)
def test_each_validator_rule_refuses(schedule, words):
    got = statuses(schedule)
    assert got and all(s == "fail" for s, _ in got)
    assert any(words in m for _, m in got), got


def test_k_above_num_speculative_tokens_is_refused_not_clamped():
    (status, message), = statuses([[1, 4, 9], [5, 256, 3]], k=7)  # fmt: skip
    assert status == "fail" and "silently clamp" in message and "1-4:9" in message


def test_valid_schedule_gaps_unsorted_and_zero_k():
    got = statuses([[33, 256, 0], [1, 4, 7], [8, 16, 5]], k=7)
    assert [s for s, _ in got] == ["pass"]
    assert "gaps 5-7, 17-32 keep the previous K" in got[0][1]
    assert "above 256 use K=0" in got[0][1]


def test_version_gate_and_baseline():
    (status, message), = statuses([[1, 256, 3]], version=VllmVersion("0.23.0"))  # fmt: skip
    assert status == "fail" and "first in vLLM 0.24.0" in message
    assert [s for s, _ in statuses([[1, 256, 3]], version=VllmVersion("0.24.0"))] == ["pass"]
    assert statuses([[1, 256, 3]], mode="baseline")[0][0] == "fail"


def test_p_eagle_is_refused_with_the_engines_reason():
    allowed, reason = P_EAGLE_DYNAMIC_K
    assert not allowed and "propose_draft_token_ids" in reason
    assert all(e in reason for e in P_EAGLE_ENGINE_ERRORS)
    (status, message), = statuses([[1, 4, 3], [5, 256, 2]], k=3, mode="p-eagle")  # fmt: skip
    assert status == "fail" and P_EAGLE_ENGINE_ERRORS[0] in message
    assert "refused for p-eagle" in message


def test_sweep_ranges_become_a_schedule():
    ranges = [{"from": 1, "to": 1, "k": 7}, {"from": 4, "to": 8, "k": 5},
              {"from": 32, "to": 128, "k": 3}]  # fmt: skip
    sched = schedule_from_ranges(ranges)
    assert sched == [[1, 3, 7], [4, 31, 5], [32, 256, 3]]
    assert [s for s, _ in statuses(sched, k=7)] == ["pass"]  # always valid for vLLM
    assert schedule_from_ranges([{"from": 8, "to": 512, "k": 2}]) == [[1, 512, 2]]
    assert schedule_from_ranges([]) == []


def spec_config(doc: dict) -> dict:
    env = doc["create_model"]["PrimaryContainer"]["Environment"]
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"]) == doc["speculative_config"]
    return doc["speculative_config"]


def test_plan_k_schedule_into_the_speculative_config(capsys, monkeypatch, tmp_path):
    make_offline(monkeypatch, tmp_path)
    doc = plan_json(capsys, "gpt-oss-20b", "--mode", "eagle3", "-k", "7", "--k-schedule",
                    "1-4:7,5-32:5,33-256:3", "--vllm-version", "0.31.0")  # fmt: skip
    cfg = spec_config(doc)
    assert cfg["num_speculative_tokens"] == 7
    assert cfg["num_speculative_tokens_per_batch_size"] == [[1, 4, 7], [5, 32, 5], [33, 256, 3]]
    # Without -k, K is the schedule's largest; the spec file form is the same field.
    doc = plan_json(capsys, "gpt-oss-20b", "--mode", "eagle3", "--k-schedule", "1-8:5,9-64:2",
                    "--vllm-version", "0.31.0")  # fmt: skip
    assert spec_config(doc)["num_speculative_tokens"] == 5


@pytest.mark.parametrize(
    "args,words",
    [
        (
            [
                "--mode",
                "p-eagle",
                "-k",
                "3",
                "--k-schedule",
                "1-4:3,5-256:2",
                "--vllm-version",
                "0.31.0",
            ],
            "refused for p-eagle",
        ),  # fmt: skip
        (["--mode", "eagle3", "-k", "3", "--k-schedule", "1-4:3,5-256:2"], "first in vLLM 0.24.0"),
        (
            [
                "--mode",
                "eagle3",
                "-k",
                "5",
                "--k-schedule",
                "1-4:7,5-256:3",
                "--vllm-version",
                "0.31.0",
            ],
            "silently clamp",
        ),  # fmt: skip
    ],
)
def test_plan_refuses_what_vllm_would_not_run(capsys, monkeypatch, tmp_path, args, words):
    make_offline(monkeypatch, tmp_path)
    code, out, err = run_cli(capsys, "plan", "gpt-oss-20b", *args)
    assert code != 0 and words in out + err


def test_sweep_schedule_is_deployable_for_eagle3_refused_for_p_eagle():
    from sm_peagle.benchmarking.sweep import k_schedules

    ranges = [{"from": 1, "to": 4, "k": 7}, {"from": 32, "to": 128, "k": 3}]
    out = k_schedules({"eagle3": ranges, "p-eagle": ranges, "other": ranges[:1]})
    assert out["eagle3"]["k_schedule"] == "1-31:7,32-256:3" and out["eagle3"]["deployable"]
    assert out["eagle3"]["num_speculative_tokens"] == 7
    assert not out["p-eagle"]["deployable"] and "propose_draft_token_ids" in out["p-eagle"][
        "refused"]  # fmt: skip
    assert "other" not in out  # one K everywhere: a fixed -k says the same
