"""`peagle plan` / `sm_peagle.plan()` show the rollout the spec asks for: the strategy, the
steps, the exact DeploymentConfig the next update sends for the spec's `instance_count`,
the rollback alarms, and a note for each alarm whose threshold needs the live fleet (plan
reads no live metric). `--rollout canary:25%` and `rollout="canary:25%"` plan the same."""

from __future__ import annotations

import json

import pytest

import sm_peagle
from sm_peagle.cli.app import main
from sm_peagle.errors import SpecError

MODEL = "gpt-oss-20b"


def _json(out: str) -> dict:
    return json.loads(out[: out.index("\n}\n") + 2])


def _allowance(plan_doc: dict) -> int:
    """The provisioning allowance update's waiter gives a new fleet: the variant's download
    and health-check windows plus 15 minutes."""
    v = plan_doc["create_endpoint_config"]["ProductionVariants"][0]
    return (
        v.get("ModelDataDownloadTimeoutInSeconds", 3600)
        + v.get("ContainerStartupHealthCheckTimeoutInSeconds", 3600)
        + 900
    )


def test_cli_and_sdk_plan_the_same_canary(capsys) -> None:
    main(["plan", MODEL, "--instance-count", "4", "--rollout", "canary:25%", "--bake", "5m",
          "--json"])  # fmt: skip
    cli = _json(capsys.readouterr().out)
    sdk = sm_peagle.plan(MODEL, instance_count=4, rollout="canary:25%", bake="5m").to_dict()
    assert cli["rollout"] == sdk["rollout"]
    r = cli["rollout"]
    endpoint = cli["names"]["endpoint"]
    assert r["strategy"] == "canary"
    assert r["fleet"] == 4
    assert r["new_config"] == cli["create_endpoint_config"]["EndpointConfigName"]
    # 25% of 4 = 1 instance, which bakes 300 s; then all of it and the final bake (= bake)
    assert r["steps"] == [
        {"share": 0.25, "bake_s": 300, "final": False},
        {"share": 1.0, "bake_s": 300, "final": True},
    ]
    assert r["deployment_config"] == {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {
                "Type": "CANARY",
                "WaitIntervalInSeconds": 300,
                "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 25},
            },
            "TerminationWaitInSeconds": 300,
            "MaximumExecutionTimeoutInSeconds": _allowance(cli) + 300 + 300,
        },
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": f"{endpoint}-rollout-errors"}]},
    }
    # no monitoring: no speculation alarm, said so; the latency default needs the live p90
    notes = " | ".join(r["notes"])
    assert "monitoring is off" in notes
    assert "update reads and plan does not" in notes and "latency" in notes
    checks = {c["name"]: c for c in cli["checks"]}
    assert checks["rollout"]["status"] == "pass"
    assert checks["aws.request_shapes"]["status"] == "pass"


def test_without_a_rollout_the_plan_has_none() -> None:
    doc = sm_peagle.plan(MODEL, instance_count=4).to_dict()
    assert doc["rollout"] is None
    assert "rollout" not in {c["name"] for c in doc["checks"]}


def test_monitored_canary_notes_the_live_acceptance_plan_does_not_read() -> None:
    p = sm_peagle.plan(MODEL, instance_count=4, rollout="canary", monitor=True, k=5)
    endpoint = p.names["endpoint"]
    # both the speculation and the latency thresholds wait for live facts: only 5xx here
    assert p.rollout.alarm_names == [f"{endpoint}-rollout-errors"]
    (note,) = [n for n in p.rollout.notes if "speculation" in n]
    # K=5: T = 1.3; one canary of four has a share of 0.25
    assert "live fleet's acceptance over the last hour" in note
    assert "update reads and plan does not" in note


def test_all_at_once_monitored_speculation_alarm_needs_no_live_facts() -> None:
    p = sm_peagle.plan(MODEL, instance_count=1, rollout="all-at-once", monitor=True, k=5)
    endpoint = p.names["endpoint"]
    names = [f"{endpoint}-rollout-speculation", f"{endpoint}-rollout-errors"]
    assert p.rollout.alarm_names == names
    assert p.rollout.alarms[0]["Threshold"] == 1.3  # K=5: 1 + 0.05 x 6


def test_text_shows_steps_config_alarms_and_notes(capsys) -> None:
    assert main(["plan", MODEL, "--instance-count", "4", "--rollout", "linear:1"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("Rollout of the next update") :]
    assert "strategy: linear, over 4 instances" in block
    for share in ("25%", "50%", "75%"):
        assert f"- {share} of the instances on the new fleet: bake 600 s" in block
    assert "- 100% of the instances on the new fleet: final bake 600 s" in block
    assert "UpdateEndpoint  (DeploymentConfig; by update, not deploy)" in block
    assert "Type: LINEAR" in block and "Type: INSTANCE_COUNT" in block
    assert "PutMetricAlarm  (cloudwatch; by update before UpdateEndpoint" in block
    assert "MetricName: Invocation5XXErrors" in block
    assert "note: " in block


def test_a_strategy_the_spec_fleet_cannot_take_is_a_warning_in_cli_words(capsys) -> None:
    """A deployment with a one-instance canary is fine (deploy sends no rollout); the plan
    warns, and update refuses it (exit 2) if the live fleet is still one instance."""
    assert main(["plan", MODEL, "--rollout", "canary", "--json"]) == 0
    doc = _json(capsys.readouterr().out)
    assert doc["rollout"] is None
    check = {c["name"]: c for c in doc["checks"]}["rollout"]
    assert check["status"] == "warn"
    assert "needs at least 2 instances" in check["message"]
    assert "--rollout all-at-once" in check["fix"]  # the CLI's words, not rollout=
    p = sm_peagle.plan(MODEL, rollout="canary")
    (sdk,) = [c for c in p.checks if c.name == "rollout"]
    assert "rollout='all-at-once'" in str(sdk.fix)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("blue-green", "endpoint.rollout.strategy"),
        ("canary:0", "endpoint.rollout.size"),
        ("canary:abc", "endpoint.rollout.size"),
        ("linear:101%", "endpoint.rollout.size"),
        ("all-at-once:2", "endpoint.rollout"),
    ],
)
def test_bad_rollout_values_exit_2_from_cli_and_raise_from_sdk(capsys, value, field) -> None:
    assert main(["plan", MODEL, "--rollout", value]) == 2
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert line.startswith("error: ") and field in line and "(fix: " in line
    with pytest.raises(SpecError, match=field.replace(".", r"\.")):
        sm_peagle.plan(MODEL, rollout=value)


def test_a_bad_bake_exits_2(capsys) -> None:
    assert main(["plan", MODEL, "--rollout", "canary", "--bake", "10x"]) == 2
    assert "endpoint.rollout.bake" in capsys.readouterr().err
    with pytest.raises(SpecError, match="bake"):
        sm_peagle.plan(MODEL, bake="2h")  # WaitIntervalInSeconds max 3600
