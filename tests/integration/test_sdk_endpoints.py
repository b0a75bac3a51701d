"""The SDK's endpoint lifecycle and inventory against the moto harness: what a Python user
gets from sm_peagle.deploy/status/ls/logs/update/diff/delete/gc, the requests sent, and
that bad input is refused with the CLI's typed error before any request (nothing sent)."""

from __future__ import annotations

import json

import pytest

import sm_peagle
from sm_peagle.errors import NotFound, SpecError
from tests.integration.lifecycle_env import left_in_moto, record_requests, run

NAME = "peagle-gpt-oss-20b-p-eagle"
EVERY_SERVICE = ("sagemaker", "application-autoscaling", "sts", "s3", "logs", "iam")


@pytest.fixture
def recorded(world, monkeypatch):
    """The world, recording every service the SDK could reach (STS and logs included)."""
    record_requests(world, monkeypatch, *EVERY_SERVICE)
    return world


def test_sandbox_only_model_is_refused_outside_the_sandbox_before_any_request(
    recorded, capsys, monkeypatch
):
    """tiny-llama is the sandbox plugin's model (served by its target): anywhere else it is
    refused, and the remedy is the target's own run wording in each face
    (`AwsTarget.run`: the plugin's declaration, not peagle's words)."""
    from sm_peagle import plugins

    for name in ("PEAGLE_SANDBOX_URL", "PEAGLE_TARGET"):
        monkeypatch.delenv(name, raising=False)
    run_on = plugins.target_named("sandbox").run
    with pytest.raises(SpecError, match="sandbox-only") as err:
        sm_peagle.deploy("tiny-llama")
    assert err.value.remedy == f"deploy it on that target: {run_on.python}"
    with pytest.raises(SpecError, match="sandbox-only"):
        sm_peagle.apply({"model": "tiny-llama"})
    code, out, stderr = run(capsys, "deploy", "tiny-llama", "--yes")
    assert code == 2 and out == ""
    [line] = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "tiny-llama is a sandbox-only model" in line
    assert line.endswith(f"(fix: deploy it on that target: {run_on.cli})")
    assert recorded.requests == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 0}, "K must be at least 1"),
        ({"mode": "fast"}, "speculative.mode"),
        ({"instance_count": 0}, "instance_count"),
        ({"instance_type": "g5.xlarge"}, "instance_type"),
        ({"copies": 1}, "go together"),
        ({"component": "baseline"}, "go together"),
        ({"component": "baseline", "copies": -1}, "0 or more, not -1"),
        ({"component": "p-eagle", "k": 4, "copies": 2}, "separate updates"),
        ({"component": "p-eagle", "k": 4, "instance_count": 2}, "changes one component"),
        ({"k": 4, "timeout": "soon"}, "duration 'soon'"),
    ],
)
def test_update_refuses_bad_input_before_any_request(recorded, options, message):
    with pytest.raises(SpecError, match=message):
        sm_peagle.update(NAME, **options)
    assert recorded.requests == []


def test_bad_durations_are_refused_before_any_request(recorded):
    with pytest.raises(SpecError, match="duration '5 minutes'"):
        sm_peagle.logs(NAME, since="5 minutes")
    with pytest.raises(SpecError, match="since"):
        sm_peagle.logs(NAME, since=-1)
    with pytest.raises(SpecError, match="duration"):
        sm_peagle.gc(min_age="yesterday")
    assert recorded.requests == []


def test_the_cli_gives_the_same_error_as_the_sdk(recorded, capsys):
    """One validation: `peagle update` and sm_peagle.update refuse alike (SpecError, exit
    2), in the same words but for how each spells the option (`--copies` / `copies=`)."""
    cases = (
        (["-k", "0"], {"k": 0}),
        (["--copies", "1"], {"copies": 1}),
        (
            ["--component", "p-eagle", "-k", "4", "--copies", "2"],
            {"component": "p-eagle", "k": 4, "copies": 2},
        ),  # noqa: E501
        (["--timeout", "soon", "-k", "4"], {"timeout": "soon", "k": 4}),
    )
    spellings = (
        ("--component NAME", "component=NAME"),
        ("--copies N", "copies=N"),
        ("--copies", "copies="),
        ("-k/--mode", "k=/mode="),
    )  # noqa: E501
    for argv, options in cases:
        with pytest.raises(SpecError) as err:
            sm_peagle.update(NAME, **options)
        code, _, stderr = run(capsys, "update", NAME, *argv, "--yes")
        assert code == err.value.exit_code == 2
        cli_line = stderr.strip().removeprefix("error: ").split(" (fix:")[0]
        for cli, sdk in spellings:
            cli_line = cli_line.replace(cli, sdk)
        assert cli_line == err.value.message
    assert recorded.requests == []


def test_sdk_lifecycle_status_ls_logs_update_diff_delete(world, sagemaker_harness):
    asked: list[str] = []
    ep = sm_peagle.deploy("gpt-oss-20b", confirm=asked.append)
    assert asked and asked[0].startswith(f"Create {NAME} on 1 x ")
    assert ep.deployment is not None and ep.deployment.status == "InService"
    assert [k for k, _ in ep.deployment.created] == ["model", "endpoint_config", "endpoint"]

    st = sm_peagle.status(NAME)
    assert st.status == "InService"
    with pytest.warns(
        FutureWarning, match=r"EndpointStatus\['status'\] is deprecated: use .status"
    ):
        assert st["status"] == "InService"  # the dict it was, for one release
    assert json.loads(json.dumps(st.to_dict()))["endpoint"] == NAME
    assert [r.endpoint for r in sm_peagle.ls()] == [NAME]
    assert sm_peagle.ls()[0].to_dict()["managed"] is True

    sagemaker_harness.seed_logs(NAME, ["INFO SpecDecoding metrics: Mean acceptance length: 3.41"])
    events = list(sm_peagle.logs(NAME, since="5m"))
    assert [e.spec_decoding["mean_acceptance_length"] for e in events] == [3.41]
    assert [e.message for e in ep.logs(since="5m")] == [events[0].message]
    with pytest.raises(NotFound):
        list(sm_peagle.logs("no-such-endpoint", since="5m"))

    assert sm_peagle.diff({"model": "gpt-oss-20b"}).action == "noop"
    assert (
        sm_peagle.diff(
            {"model": "gpt-oss-20b", "speculative": {"num_speculative_tokens": 4}}
        ).action
        == "update"
    )  # noqa: E501

    world.requests.clear()
    result = sm_peagle.update(NAME, k=4, confirm=asked.append)
    assert asked[-1].startswith(f"Update {NAME} (K ") and asked[-1].endswith(" -> 4)?")
    assert result.kind == "endpoint" and result.status == "InService" and result.changed
    assert result.to_dict()["changes"] == result.changes
    assert len(world.sent("UpdateEndpoint")) == 1 and len(world.sent("CreateModel")) == 1
    assert sm_peagle.status(NAME).k == 4

    gone = sm_peagle.delete(NAME)
    assert NAME in gone.deleted and gone.note is None
    assert sm_peagle.delete(NAME).note == "already gone"
    assert sm_peagle.gc(min_age=0).orphans == []
    assert left_in_moto() == {}


def test_an_sdk_call_prompts_nothing_and_a_raising_confirm_stops_it(world):
    sm_peagle.deploy("gpt-oss-20b")  # confirm=None: proceed, as an SDK call does

    class Declined(Exception):
        pass

    def no(_question: str) -> None:
        raise Declined

    world.requests.clear()
    with pytest.raises(Declined):
        sm_peagle.update(NAME, k=5, confirm=no)
    assert world.sent("UpdateEndpoint") == [] and world.sent("CreateModel") == []
    with pytest.raises(Declined):
        sm_peagle.delete(NAME, confirm=no)
    assert world.sent("DeleteEndpoint") == []
    sm_peagle.delete(NAME)


def test_dry_runs_read_and_plan_but_change_nothing(world, sagemaker_harness, capsys):
    """update/delete dry_run (and --dry-run): what would change or go, from the same reads
    and the same refusals, and not one request that changes anything."""
    sm_peagle.deploy("gpt-oss-20b", role=world.role_arn)
    before = left_in_moto()
    sagemaker_harness.requests.clear()
    r = sm_peagle.update(NAME, k=5, dry_run=True)
    assert r.dry_run and r.changes == ["K 3 -> 5"] and not r.changed
    d = sm_peagle.delete(NAME, dry_run=True)
    assert d.would_delete[0] == NAME and len(d.would_delete) == 3  # endpoint, config, model
    assert d.to_dict()["dry_run"] is True
    code, out, err = run(capsys, "update", NAME, "-k", "5", "--dry-run")
    assert code == 0 and "would change K 3 -> 5" in out
    code, out, err = run(capsys, "delete", NAME, "--dry-run", "--json")
    assert code == 0 and json.loads(out)["would_delete"] == d.would_delete
    mutating = [
        op
        for op in sagemaker_harness.requests.operations()
        if not op.startswith(("Describe", "List", "Get"))
    ]
    assert mutating == []
    assert left_in_moto() == before


def test_endpoint_update_keeps_its_earlier_contract(world, sagemaker_harness):
    """Endpoint.update as Python callers used it before the SDK-first change: any spec
    option of a one-model endpoint, `result["created"]` as names, and `ep.plan` the new
    plan; a component update takes k/mode only."""
    ep = sm_peagle.deploy("gpt-oss-20b", role=world.role_arn)
    result = ep.update(k=5, autoscale="1:2")
    with pytest.warns(FutureWarning, match=r"UpdateResult\['created'\] is deprecated"):
        names = result["created"]
    assert all(isinstance(n, str) for n in names) and len(names) == 2
    assert ep.plan is not None and ep.plan.speculative_config["num_speculative_tokens"] == 5
    assert ep.plan.spec.autoscaling.max_instances == 2
    with pytest.raises(SpecError, match="takes k= and mode= only"):
        ep.update(component="p-eagle", k=4, image="x")
    with pytest.raises(TypeError, match="colour"):  # the options are real keywords now
        ep.update(colour="blue")
    ep.delete()
    assert left_in_moto() == {}


def test_delete_of_a_gone_endpoint_removes_what_its_deployment_left(world, sagemaker_harness):
    """A delete interrupted after DeleteEndpoint (or an endpoint deleted by hand) leaves
    the config and model: `delete NAME` again finds them by their deployment tag and
    removes them, and only them (a bystander's model stays)."""
    import boto3

    sm_peagle.deploy("gpt-oss-20b", role=world.role_arn)
    sm = boto3.client("sagemaker", region_name="us-east-1")
    sm.create_model(
        ModelName=f"{NAME}-someone-elses",
        ExecutionRoleArn=world.role_arn,
        PrimaryContainer={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )
    sm.delete_endpoint(EndpointName=NAME)  # the endpoint goes; its config and model stay
    left = left_in_moto()
    assert "endpoints" not in left and len(left["models"]) == 2
    preview = sm_peagle.delete(NAME, dry_run=True)
    assert NAME not in preview.would_delete and len(preview.would_delete) == 2
    result = sm_peagle.delete(NAME)
    assert sorted(result.deleted) == sorted(preview.would_delete)
    assert left_in_moto() == {"models": [f"{NAME}-someone-elses"]}
    assert sm_peagle.delete(NAME).note == "already gone"
