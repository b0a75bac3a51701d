"""`endpoint.rollout` (RolloutSpec): its defaults and bounds (botocore 1.44.8's model:
WaitIntervalInSeconds and TerminationWaitInSeconds 0..3600, MaximumExecutionTimeoutInSeconds
600..28800, AutoRollbackConfig.Alarms 1..10), the combinations it refuses, and that it stays
out of the spec hash and the `peagle:spec:*` tags: it says how the next update moves
traffic, not what runs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.planning.spec.rollout_spec import RolloutSpec, parse_size
from sm_peagle.planning.spec.tags import spec_tag_list


def test_defaults() -> None:
    r = RolloutSpec()
    assert (r.strategy, r.size, r.bake, r.final_bake, r.timeout) == (
        "all-at-once", None, 600, None, None,
    )  # fmt: skip
    assert (r.rollback_on, r.error_rate, r.alarms, r.require_traffic) == (None, 0.05, [], True)
    assert r.final_wait == 600  # the final bake defaults to the bake


@pytest.mark.parametrize(
    ("given", "seconds"), [("10m", 600), ("1h", 3600), ("90s", 90), ("1m30s", 90), (300, 300)]
)
def test_durations(given, seconds) -> None:
    assert RolloutSpec(bake=given).bake == seconds


@pytest.mark.parametrize(
    "fields",
    [
        {"bake": 3601},  # WaitIntervalInSeconds max 3600
        {"bake": -1},
        {"final_bake": 3601},  # TerminationWaitInSeconds max 3600
        {"timeout": 599},  # MaximumExecutionTimeoutInSeconds 600..28800
        {"timeout": 28801},
        {"alarms": [f"a{i}" for i in range(11)]},  # at most 10 alarms
        {"alarms": ["a", "a"]},
        {"alarms": [" "]},  # AlarmName pattern (?!\s*$).+
        {"error_rate": 0},
        {"strategy": "blue-green"},
        {"strategy": "rolling", "final_bake": 60},  # a rolling update has no final bake
        {"strategy": "canary", "rollback_size": 1},  # RollbackMaximumBatchSize: rolling only
        {"strategy": "all-at-once", "size": 1},
        {"rollback_on": ["latency", "latency"]},
        {"rollback_on": ["cpu"]},
        {"size": 0},
        {"size": "0%"},
        {"size": "150%"},
        {"bake": "10 minutes"},
        {"unknown": 1},
    ],
)
def test_refused(fields) -> None:
    with pytest.raises(ValidationError):
        RolloutSpec(**fields)


def test_sizes() -> None:
    assert parse_size(2) == ("count", 2)
    assert parse_size("2") == ("count", 2)
    assert parse_size("25%") == ("percent", 25)
    assert RolloutSpec(strategy="canary", size="2").size == 2
    with pytest.raises(ValueError):
        parse_size(True)


BASE = {"model": "gpt-oss-20b", "endpoint": {"instance_count": 4}}


def _spec(rollout: dict | None):
    data = {**BASE, "endpoint": {**BASE["endpoint"]}}
    if rollout is not None:
        data["endpoint"]["rollout"] = rollout
    return spec_from_data(data)


def test_rollout_is_outside_the_spec_hash_and_the_tags() -> None:
    """A rollout-only change must send nothing and leave the tags alone (issue 38): the
    hash (in the names and tags) and the tags are those of the spec without it."""
    plain = _spec(None)
    canary = _spec({"strategy": "canary", "size": 1, "bake": "5m", "alarms": ["mine"]})
    assert canary.endpoint.rollout is not None
    assert canary.sha256() == plain.sha256()
    assert spec_tag_list(canary) == spec_tag_list(plain)
    assert not any("rollout" in t["Value"] for t in spec_tag_list(canary))


def test_rollout_alone_in_endpoint_leaves_no_endpoint_tag() -> None:
    bare = spec_from_data({"model": "gpt-oss-20b"})
    only = spec_from_data({"model": "gpt-oss-20b", "endpoint": {"rollout": {"strategy": "linear"}}})
    assert spec_tag_list(only) == spec_tag_list(bare)
