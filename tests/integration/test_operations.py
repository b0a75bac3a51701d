"""Interrupted, killed or racing: what exists on AWS decides, not what the client heard.

Each fault is injected through botocore's own events on the clients peagle makes:
- `after-call.sagemaker.<Op>` raising: SageMaker did it, the client never heard (a Ctrl-C
  while the response is in flight);
- `before-call.sagemaker.<Op>` raising: the request is never sent (a second Ctrl-C, in
  the rollback);
- SystemExit, which no `except Exception/KeyboardInterrupt` catches: the process dies
  there with no rollback, as under SIGKILL.
After each, the moto account holds exactly what it held before, or the completed result,
or (after a death) exactly what `gc` then removes; a bystander made outside peagle is
never touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory

NAME = "peagle-gpt-oss-20b-p-eagle"
EMPTY = {"models": [], "endpoint_configs": [], "endpoints": []}


def sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def inject(monkeypatch: pytest.MonkeyPatch, event: str, fault: Callable[[], None]) -> list[int]:
    """Call `fault` at botocore `event` (once) on every SageMaker client peagle makes;
    the list counts the calls."""
    from sm_peagle.aws import AwsContext

    wrapped = AwsContext.client
    fired: list[int] = []

    def handler(**_: Any) -> None:
        if not fired:
            fired.append(1)
            fault()

    def client(self: AwsContext, service: str, region: str | None = None, **cfg: Any) -> Any:
        c = wrapped(self, service, region, **cfg)
        if service == "sagemaker" and not getattr(c, f"_fault_{id(fired)}", False):
            setattr(c, f"_fault_{id(fired)}", True)
            c.meta.events.register(event, handler, unique_id=f"fault-{id(fired)}")
        return c

    monkeypatch.setattr(AwsContext, "client", client)
    return fired


def interrupt() -> None:
    raise KeyboardInterrupt


def die() -> None:
    raise SystemExit(137)  # no rollback runs: what SIGKILL leaves


def bystander(role: str) -> None:
    """A model, config and endpoint made outside peagle (no peagle tags)."""
    c = sm()
    c.create_model(
        ModelName="theirs-m", ExecutionRoleArn=role, PrimaryContainer={"Image": "x.dkr/img:1"}
    )
    c.create_endpoint_config(
        EndpointConfigName="theirs-c",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "theirs-m",
                "InstanceType": "ml.g7e.2xlarge",
                "InitialInstanceCount": 1,
            }
        ],
    )
    c.create_endpoint(EndpointName="theirs-e", EndpointConfigName="theirs-c")


THEIRS = {"models": ["theirs-m"], "endpoint_configs": ["theirs-c"], "endpoints": ["theirs-e"]}


def inventory() -> dict[str, list[str]]:
    return {k: sorted(v) for k, v in sagemaker_inventory().items() if k in EMPTY}


@pytest.mark.parametrize("step", ["CreateModel", "CreateEndpointConfig", "CreateEndpoint"])
def test_ctrl_c_while_a_create_is_in_flight_removes_what_aws_made(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The Create* reached SageMaker and its answer never arrived: the rollback finds the
    resource by its name and the run's operation tag and deletes it; before, this left
    an InService endpoint nobody was told about."""
    bystander(world.role_arn)
    fired = inject(monkeypatch, f"after-call.sagemaker.{step}", interrupt)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert fired and code == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted"
    assert inventory() == THEIRS
    made = [params for op, params in world.requests if op == step]
    deleted = {op: [p for o, p in world.requests if o == op] for op in ("DeleteEndpoint",)}
    if step == "CreateEndpoint":  # the in-flight endpoint itself went, by its name
        assert [p["EndpointName"] for p in deleted["DeleteEndpoint"]] == [NAME]
    assert len(made) == 1


def test_a_second_ctrl_c_stops_the_rollback_and_names_what_is_left(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bystander(world.role_arn)
    inject(monkeypatch, "after-call.sagemaker.CreateEndpoint", interrupt)
    second = inject(monkeypatch, "before-call.sagemaker.DeleteEndpoint", interrupt)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert second and code == 130, err
    # The error line itself (all that --quiet leaves) names them, and the command carries
    # the region the deploy talked to (issue 33).
    line = err.strip().splitlines()[-1]
    inv = inventory()
    (config,) = [c for c in inv["endpoint_configs"] if c != "theirs-c"]
    (model,) = [m for m in inv["models"] if m != "theirs-m"]
    assert line == (
        "error: interrupted; rollback stopped: "
        f"left endpoint {NAME}, endpoint config {config}, model {model} "
        f"(fix: `peagle delete {NAME} --yes --region {REGION}` removes exactly these)"
    )
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert inventory() == THEIRS


def test_a_deploy_killed_mid_way_is_named_by_status_and_removed_by_gc(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bystander(world.role_arn)
    inject(monkeypatch, "after-call.sagemaker.CreateEndpoint", die)
    with pytest.raises(SystemExit):
        run(capsys, "deploy", "gpt-oss-20b", "--yes")
    capsys.readouterr()
    inv = inventory()
    assert NAME in inv["endpoints"]
    op = _operation_of_endpoint(NAME)

    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    (u,) = json.loads(out)["unfinished"]
    assert (u["operation"], u["state"], u["resources"]) == (op, "unfinished", [f"endpoint {NAME}"])
    assert u["undo"] == f"peagle delete {NAME} --yes"
    code, _, err = run(capsys, "status", NAME)
    undo = f"undo: `peagle delete {NAME} --yes`"
    assert f"operation {op} did not finish: endpoint {NAME}; {undo}" in err

    code, out, err = run(capsys, "gc", "--yes", "--json")  # default --min-age 10m
    assert code == 0, err
    doc = json.loads(out)
    ours = {k: [n for n in v if n not in THEIRS[k]] for k, v in inv.items()}
    assert doc["endpoints"] == {NAME: f"its deployment ({op}) never completed"}
    assert sorted(doc["deleted"]) == sorted(n for v in ours.values() for n in v)
    assert inventory() == THEIRS


def _operation_of_endpoint(name: str) -> str:
    c = sm()
    arn = c.describe_endpoint(EndpointName=name)["EndpointArn"]
    tags = {t["Key"]: t["Value"] for t in c.list_tags(ResourceArn=arn)["Tags"]}
    assert "peagle:completed" not in tags
    return tags["peagle:operation"]


def _tag_as_running_elsewhere(name: str) -> str:
    """Re-tag what a killed deploy left as if its run were alive on another machine,
    within its deadline: the case gc must not touch."""
    c = sm()
    op = "op-20991231T000000Z-abcdef"
    for _, arn in _arns_of_deployment(name):
        c.add_tags(
            ResourceArn=arn,
            Tags=[
                {"Key": "peagle:operation", "Value": op},
                {"Key": "peagle:operation-owner", "Value": "ci-runner-7:4242"},
                {"Key": "peagle:operation-until", "Value": "2099-12-31T03:00:00Z"},
            ],
        )
    return op


def _arns_of_deployment(name: str) -> list[tuple[str, str]]:
    c = sm()
    ep = c.describe_endpoint(EndpointName=name)
    cfg = c.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    model = c.describe_model(ModelName=cfg["ProductionVariants"][0]["ModelName"])
    return [
        ("endpoint", ep["EndpointArn"]),
        ("endpoint_config", cfg["EndpointConfigArn"]),
        ("model", model["ModelArn"]),
    ]


def test_gc_never_takes_what_a_running_operation_made_unless_forced_by_name(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "after-call.sagemaker.CreateEndpoint", die)
    with pytest.raises(SystemExit):
        run(capsys, "deploy", "gpt-oss-20b", "--yes")
    capsys.readouterr()
    op = _tag_as_running_elsewhere(NAME)
    before = inventory()

    code, out, err = run(capsys, "gc", "--min-age", "0", "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    # The endpoint is held; its config and model are then in use, so not garbage at all.
    assert (doc["deleted"], doc["running"]) == ([], {op: [NAME]})
    code, out, err = run(capsys, "gc", "--operation", op, "--yes")
    assert code == 0 and "nothing to collect" in out
    assert f"`peagle gc --operation {op} --force --yes` removes them" in err
    assert inventory() == before

    code, _, err = run(capsys, "gc", "--force", "--yes")  # --force names no operation
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: force removes")
    code, _, err = run(capsys, "gc", "--operation", "op-nope", "--yes")
    assert code == 2 and "is not an operation id" in err
    assert inventory() == before

    code, out, err = run(capsys, "gc", "--operation", op, "--force", "--yes", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["deleted"]) == sorted(n for v in before.values() for n in v)
    assert inventory() == EMPTY


def test_gc_removes_a_peagle_endpoint_whose_config_is_gone(world: Any, capsys: Any) -> None:
    bystander(world.role_arn)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    c = sm()
    config = c.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    c.delete_endpoint_config(EndpointConfigName=config)  # by hand, or a delete cut short
    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    assert json.loads(out)["problem"] == f"its endpoint config {config} is missing"
    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["endpoints"] == {NAME: f"its endpoint config {config} is missing"}
    assert inventory() == THEIRS


def test_delete_finishes_through_one_ctrl_c(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After DeleteEndpoint nothing can bring the endpoint back: the first Ctrl-C lets
    the delete finish (and still exits 130), so no config or model is orphaned."""
    bystander(world.role_arn)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    inject(monkeypatch, "after-call.sagemaker.DeleteEndpoint", interrupt)
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 130, err
    assert f"interrupted: finishing the delete of {NAME}" in err
    assert inventory() == THEIRS


def test_a_second_ctrl_c_stops_a_delete_and_names_what_is_left(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bystander(world.role_arn)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    inv = inventory()
    (config,) = [c for c in inv["endpoint_configs"] if c != "theirs-c"]
    (model,) = [m for m in inv["models"] if m != "theirs-m"]
    inject(monkeypatch, "after-call.sagemaker.DeleteEndpoint", interrupt)
    inject(monkeypatch, "before-call.sagemaker.DeleteEndpointConfig", interrupt)
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 130, err
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted; delete stopped: left endpoint config {config}, model {model} "
        f"(fix: `peagle delete {NAME} --yes --region {REGION}` removes exactly these)"
    )
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert inventory() == THEIRS


@pytest.mark.parametrize("step", ["CreateModel", "CreateEndpointConfig"])
def test_an_update_interrupted_before_it_switches_removes_only_its_own(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    before = inventory()
    arn = sm().describe_endpoint(EndpointName=NAME)["EndpointArn"]
    tags_before = sm().list_tags(ResourceArn=arn)["Tags"]
    inject(monkeypatch, f"after-call.sagemaker.{step}", interrupt)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert code == 130, err
    assert inventory() == before
    assert sm().list_tags(ResourceArn=arn)["Tags"] == tags_before


def test_update_finishes_a_deploy_killed_after_its_endpoint_came_up(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`status` offers `peagle update NAME --yes` to finish it: with nothing to change, it
    marks the endpoint complete (one AddTags), and gc then leaves it be."""
    inject(monkeypatch, "after-call.sagemaker.CreateEndpoint", die)
    with pytest.raises(SystemExit):
        run(capsys, "deploy", "gpt-oss-20b", "--yes")
    capsys.readouterr()
    op = _operation_of_endpoint(NAME)
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["unfinished"][0]["finish"].startswith(f"peagle update {NAME} --yes")
    before = inventory()
    world.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--yes")
    assert code == 0, err
    mutating = [(o, p) for o, p in world.requests if o.startswith(("Create", "Delete", "Add"))]
    arn = sm().describe_endpoint(EndpointName=NAME)["EndpointArn"]
    assert mutating == [
        ("AddTags", {"ResourceArn": arn, "Tags": [{"Key": "peagle:completed", "Value": op}]})
    ]
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["unfinished"] == []
    code, out, _ = run(capsys, "gc", "--yes", "--json")
    assert json.loads(out)["deleted"] == [] and inventory() == before


def _serving(name: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(the endpoint's tags, its serving config's tags, every config name left)."""
    c = sm()
    ep = c.describe_endpoint(EndpointName=name)
    cfg = c.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    tags = {t["Key"]: t["Value"] for t in c.list_tags(ResourceArn=ep["EndpointArn"])["Tags"]}
    cfg_tags = {
        t["Key"]: t["Value"] for t in c.list_tags(ResourceArn=cfg["EndpointConfigArn"])["Tags"]
    }
    return tags, cfg_tags, inventory()["endpoint_configs"]


def _settled(name: str) -> None:
    import time

    deadline = time.monotonic() + 120  # a bound on a hang, not a timing assertion
    while sm().describe_endpoint(EndpointName=name)["EndpointStatus"] != "InService":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _assert_update_complete(name: str) -> None:
    """The state one uninterrupted update leaves: the endpoint carries the spec its config
    was made from (the same peagle:spec-* tags), marked complete by that config's
    operation, and only that config (and its model) is left."""
    tags, cfg_tags, configs = _serving(name)
    for key in ("peagle:spec-sha256", "peagle:spec:0"):
        assert tags[key] == cfg_tags[key]
    assert tags["peagle:completed"] == cfg_tags["peagle:operation"]
    assert len(configs) == 1 and len(inventory()["models"]) == 1


def test_an_update_killed_after_it_took_effect_is_finished_by_gc(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after UpdateEndpoint reached SageMaker: the endpoint serves the new config
    with the old spec's tags, and the old config and model are unused. status says so and
    names `update NAME --yes`; gc finishes it: the endpoint's tags follow what it serves
    and the old resources go."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    old_sha = _serving(NAME)[0]["peagle:spec-sha256"]
    inject(monkeypatch, "after-call.sagemaker.UpdateEndpoint", die)
    with pytest.raises(SystemExit):
        run(capsys, "update", NAME, "-k", "5", "--yes")
    capsys.readouterr()
    _settled(NAME)  # SageMaker finishes the update the dead client started
    tags, cfg_tags, configs = _serving(NAME)
    assert tags["peagle:spec-sha256"] == old_sha != cfg_tags["peagle:spec-sha256"]
    assert len(configs) == 2
    code, out, _ = run(capsys, "status", NAME, "--json")
    (u,) = json.loads(out)["unfinished"]
    assert u["operation"] == cfg_tags["peagle:operation"]
    assert (u["undo"], u["finish"]) == (None, f"peagle update {NAME} --yes")

    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["finished"] == {NAME: cfg_tags["peagle:operation"]}
    _assert_update_complete(NAME)
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["unfinished"] == [] and json.loads(out)["k"] == 5


def test_gc_describes_each_endpoint_once_to_judge_it(world: Any, capsys: Any) -> None:
    """A healthy peagle endpoint: gc judges it (is its deployment whole, is an update left
    to finish) from one DescribeEndpoint, where it used to describe it twice. The one other
    read is "who uses what" (`resource_users`), taken fresh after judging on purpose: what
    gc deletes must not be in use at that moment. Nothing changes."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    world.requests.clear()
    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    assert world.sent("DescribeEndpoint") == [{"EndpointName": NAME}] * 2
    mutating = ("Create", "Delete", "Update", "AddTags", "DeleteTags", "Register")
    assert [op for op, _ in world.requests if op.startswith(mutating)] == []


def test_a_second_ctrl_c_after_the_switch_names_the_command_that_finishes_it(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    (old_config,), (old_model,) = inventory()["endpoint_configs"], inventory()["models"]
    inject(monkeypatch, "after-call.sagemaker.UpdateEndpoint", interrupt)
    second = inject(monkeypatch, "before-call.sagemaker.AddTags", interrupt)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert second and code == 130, err
    # The endpoint serves the new config; what is left is its tags (the retag was
    # stopped) and the old config and model, each named on the error line (all that
    # --quiet leaves), with the command that finishes the update, for this region.
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted; update stopped: left the tags of endpoint {NAME}, "
        f"endpoint config {old_config}, model {old_model} "
        f"(fix: `peagle update {NAME} --yes --region {REGION}` finishes the update: "
        "the endpoint takes its tags, the unused ones go)"
    )
    code, out, err = run(capsys, "update", NAME, "--yes")
    assert code == 0, err
    assert f"{NAME} now carries the spec it serves" in err
    _assert_update_complete(NAME)


def inject_when(
    monkeypatch: pytest.MonkeyPatch, event: str, armed: list[int], fault: Callable[[], None]
) -> list[int]:
    """`inject`, but the fault fires (once) only after `armed` is non-empty: a second
    interrupt at a step that also ran before the first one did."""
    fired: list[int] = []

    def once() -> None:
        if armed and not fired:
            fired.append(1)
            fault()

    from sm_peagle.aws import AwsContext

    wrapped = AwsContext.client

    def client(self: AwsContext, service: str, region: str | None = None, **cfg: Any) -> Any:
        c = wrapped(self, service, region, **cfg)
        if service == "sagemaker":
            c.meta.events.register(event, lambda **_: once(), unique_id=f"when-{id(fired)}")
        return c

    monkeypatch.setattr(AwsContext, "client", client)
    return fired


def test_the_update_a_double_interrupt_names_works_pasted_at_once(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, sagemaker_harness: Any
) -> None:
    """Interrupted twice while SageMaker is still Updating: the printed `update NAME --yes`,
    pasted straight away, waits for the endpoint to settle and finishes (it used to refuse
    with "is Updating; only an InService endpoint can be updated", exit 1, no fix), and
    `gc --dry-run` meanwhile names the update in flight and that command rather than
    "nothing to collect" (QA of issue 33)."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    # Count-based: each DescribeEndpoint moves one step; the endpoint stays Updating for
    # the interrupted run's one describe, gc's, and the finisher's first few polls.
    sagemaker_harness.schedule_update(NAME, ["Updating"] * 12 + ["InService"])
    first = inject(monkeypatch, "after-call.sagemaker.UpdateEndpoint", interrupt)
    second = inject_when(monkeypatch, "before-call.sagemaker.DescribeEndpoint", first, interrupt)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert first and second and code == 130, err
    assert f"(fix: `peagle update {NAME} --yes --region {REGION}`" in err.strip().splitlines()[-1]
    assert sm().describe_endpoint(EndpointName=NAME)["EndpointStatus"] == "Updating"
    pending = sm().describe_endpoint(EndpointName=NAME)["PendingDeploymentSummary"]
    cfg_arn = sm().describe_endpoint_config(EndpointConfigName=pending["EndpointConfigName"])[
        "EndpointConfigArn"
    ]
    op = {t["Key"]: t["Value"] for t in sm().list_tags(ResourceArn=cfg_arn)["Tags"]}[
        "peagle:operation"
    ]

    code, out, err = run(capsys, "gc", "--dry-run")
    assert code == 0, err
    assert "nothing to collect" not in out
    assert (
        f"{NAME} is Updating: an update (operation {op}) is still in flight; "
        f"`peagle update {NAME} --yes` waits for it and finishes it"
    ) in out  # gc ran without --region: its command targets the same default
    code, out, _ = run(capsys, "gc", "--dry-run", "--json")
    assert json.loads(out)["settling"] == {NAME: {"status": "Updating", "operation": op}}

    assert sm().describe_endpoint(EndpointName=NAME)["EndpointStatus"] == "Updating"
    code, _, err = run(capsys, "update", NAME, "--yes")
    assert code == 0, err
    assert f"{NAME} is Updating: waiting for it to settle first" in err
    _assert_update_complete(NAME)
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["unfinished"] == [] and json.loads(out)["k"] == 5


def test_a_ctrl_c_during_the_clean_up_of_a_done_update_says_it_completed(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Ctrl-C after the endpoint switched, while the old model was being removed: the
    first interrupt lets the clean-up finish, so the update completed and the line says so
    (exit 130: the command was interrupted) instead of a bare `error: interrupted`."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    fired = inject(monkeypatch, "before-call.sagemaker.DeleteModel", interrupt)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert fired and code == 130, err
    _assert_update_complete(NAME)
    serving = sm().describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted after the update of {NAME} completed (it serves {serving}); "
        "nothing is left to clean up"
    )
    code, out, err = run(capsys, "update", NAME, "-k", "5", "--yes", "--json")
    assert code == 0, err  # nothing left to finish


def test_a_second_ctrl_c_in_the_clean_up_says_the_update_completed_and_what_is_left(
    world: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted while removing the old config, then again while removing the old model:
    the endpoint already serves the new config and carries its tags, so the line says the
    update completed and names only the clean-up skipped, with the command that does it."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    (old_model,) = inventory()["models"]
    first = inject(monkeypatch, "before-call.sagemaker.DeleteEndpointConfig", interrupt)
    second = inject(monkeypatch, "before-call.sagemaker.DeleteModel", interrupt)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert first and second and code == 130, err
    serving = sm().describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted; update completed ({NAME} serves {serving}); its clean-up "
        f"stopped: left model {old_model} "
        f"(fix: `peagle update {NAME} --yes --region {REGION}` removes the unused ones)"
    )
    code, _, err = run(capsys, "update", NAME, "--yes")
    assert code == 0, err
    _assert_update_complete(NAME)
