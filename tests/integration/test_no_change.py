"""No change, no request (issue 24, item 3): an `update` or `apply` whose plan equals what
is deployed sends nothing that changes AWS and says "no changes" — right after `deploy`,
with the same spec file, and on an endpoint `peagle adopt` took over. The CLI and the
SDK alike; the evidence is the moto harness's record of every request it received.

Mutating means anything but a read: Create*/Update*/Delete* and AddTags/DeleteTags (a
retag that rewrites the same tags is no change either).
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
import yaml

import sm_peagle
from sm_peagle.lifecycle.spec_tags import decode_spec, deployed_spec, tag_dict
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.planning.spec.tags import tagged_requests
from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory
from tests.integration.test_adopt import NAME as ADOPTED
from tests.integration.test_adopt import create_jumpstart_endpoint
from tests.plan_helpers import TWO_COMPONENTS

DEPLOYED = "peagle-gpt-oss-20b-p-eagle"  # `peagle deploy gpt-oss-20b`'s default name
READS = ("Describe", "List", "Get")


def mutating(harness) -> list[str]:
    """The SageMaker / autoscaling requests since the last clear that are not reads."""
    ops = harness.requests.operations("sagemaker") + harness.requests.operations(
        "application-autoscaling"
    )
    return [op for op in ops if not op.startswith(READS)]


def endpoint_state(name: str) -> dict:
    """What a no-op must leave exactly as it was: the endpoint's config, the inventory,
    and the endpoint's tags."""
    sm = boto3.client("sagemaker", region_name=REGION)
    ep = sm.describe_endpoint(EndpointName=name)
    tags = tag_dict(sm.list_tags(ResourceArn=ep["EndpointArn"])["Tags"])
    return {"config": ep["EndpointConfigName"], "inventory": sagemaker_inventory(), "tags": tags}


@pytest.fixture
def deployed(world, capsys, sagemaker_harness):
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    sagemaker_harness.requests.clear()
    return endpoint_state(DEPLOYED)


@pytest.fixture
def adopted(world, capsys, sagemaker_harness):
    create_jumpstart_endpoint(world.role_arn)
    code, _, err = run(capsys, "adopt", ADOPTED, "--yes")
    assert code == 0, err
    sagemaker_harness.requests.clear()
    return endpoint_state(ADOPTED)


# -- update right after deploy ------------------------------------------------------------


def test_cli_update_right_after_deploy_sends_nothing(deployed, capsys, sagemaker_harness):
    code, out, err = run(capsys, "update", DEPLOYED, "--yes")
    assert code == 0, err
    assert "no changes" in err, (out, err)
    assert "Traceback" not in out + err
    assert mutating(sagemaker_harness) == []
    assert sagemaker_harness.requests.operations("sagemaker")  # it did read the endpoint
    assert endpoint_state(DEPLOYED) == deployed


def test_cli_update_json_says_nothing_changed(deployed, capsys, sagemaker_harness):
    code, out, err = run(capsys, "update", DEPLOYED, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["changed"], doc["changes"], doc["status"]) == (False, [], "InService")
    assert doc["endpoint_config"] == deployed["config"]
    assert mutating(sagemaker_harness) == []


def test_sdk_update_right_after_deploy_sends_nothing(deployed, sagemaker_harness):
    said: list[str] = []
    asked: list[str] = []
    result = sm_peagle.update(DEPLOYED, region=REGION, say=said.append, confirm=asked.append)
    assert result.changed is False and result.changes == [] and result.created == []
    assert result.status == "InService"
    assert any("no changes" in m for m in said), said
    assert asked == []  # nothing to confirm
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == deployed


def test_update_with_the_k_it_already_runs_sends_nothing(deployed, capsys, sagemaker_harness):
    """-k 3 on an endpoint whose spec says K=3: the spec is the same spec."""
    run(capsys, "update", DEPLOYED, "-k", "5", "--yes")  # K is now explicitly 5 in the spec
    sagemaker_harness.requests.clear()
    after_k5 = endpoint_state(DEPLOYED)
    code, _, err = run(capsys, "update", DEPLOYED, "-k", "5", "--yes")
    assert code == 0, err
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == after_k5


def test_a_real_change_still_updates(deployed, capsys, sagemaker_harness):
    """The control: the same fixture with -k 5 does send the update (so the no-op tests
    above are not passing because nothing can ever be sent)."""
    code, _, err = run(capsys, "update", DEPLOYED, "-k", "5", "--yes")
    assert code == 0, err
    assert "no changes" not in err
    assert mutating(sagemaker_harness)[:3] == [
        "CreateModel",
        "CreateEndpointConfig",
        "UpdateEndpoint",
    ]


def test_update_right_after_a_component_deploy_sends_nothing(world, capsys, sagemaker_harness):
    """An endpoint hosting inference components: nothing re-sent either (the scaling
    targets, policies and alarms are the spec's, unchanged)."""
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes")
    assert code == 0, err
    before = endpoint_state(DEPLOYED)
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "update", DEPLOYED, "--yes")
    assert code == 0, err
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == before


def test_tags_that_lag_the_spec_are_put_back_and_nothing_else(world, capsys, sagemaker_harness):
    """The same spec, but a tag it sets was removed by hand: update puts exactly that tag
    back (one AddTags), creates nothing and does not claim there was nothing to do."""
    spec = {"model": "gpt-oss-20b", "region": REGION, "tags": {"team": "inference"}}
    assert sm_peagle.apply(spec).applied is True
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=DEPLOYED)["EndpointArn"]
    sm.delete_tags(ResourceArn=arn, TagKeys=["team"])
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "update", DEPLOYED, "--yes")
    assert code == 0, err
    assert "no changes" not in err
    assert mutating(sagemaker_harness) == ["AddTags"]
    assert sagemaker_harness.requests.params("AddTags") == [
        {"ResourceArn": arn, "Tags": [{"Key": "team", "Value": "inference"}]}
    ]


# -- apply with the same spec ----------------------------------------------------------


def _spec_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def apply_sends_nothing(capsys, harness, spec: Path) -> None:
    """`apply -f spec` decides noop, says so, and sends nothing that changes AWS."""
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 0, err
    assert (json.loads(out)["action"], json.loads(out)["applied"]) == ("noop", False)
    assert "no changes" in err
    assert mutating(harness) == []


def test_apply_of_the_spec_deploy_wrote_sends_nothing(
    deployed, capsys, sagemaker_harness, tmp_path
):
    """The spec the endpoint carries, written to a file as a user would keep it in git."""
    sm = boto3.client("sagemaker", region_name=REGION)
    data = deployed_spec(sm, DEPLOYED).model_dump(mode="json", exclude_defaults=True)
    spec = _spec_file(tmp_path, data)
    sagemaker_harness.requests.clear()
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    code, out, _ = run(capsys, "diff", "-f", str(spec), "--json", "--detailed-exitcode")
    assert (code, json.loads(out)["action"]) == (0, "noop")
    assert endpoint_state(DEPLOYED) == deployed


def test_apply_twice_sends_nothing_the_second_time(world, capsys, sagemaker_harness, tmp_path):
    spec = _spec_file(
        tmp_path,
        {"model": "gpt-oss-20b", "region": REGION, "tags": {"team": "inference"}},
    )
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    before = endpoint_state(DEPLOYED)
    sagemaker_harness.requests.clear()
    apply_sends_nothing(capsys, sagemaker_harness, spec)
    assert endpoint_state(DEPLOYED) == before


def test_sdk_apply_twice_sends_nothing_the_second_time(world, sagemaker_harness, tmp_path):
    spec = {"model": "gpt-oss-20b", "region": REGION, "speculative": {"num_speculative_tokens": 5}}
    assert sm_peagle.apply(spec).applied is True
    before = endpoint_state(DEPLOYED)
    sagemaker_harness.requests.clear()
    said: list[str] = []
    asked: list[str] = []
    result = sm_peagle.apply(spec, say=said.append, confirm=asked.append)
    assert (result.action, result.applied) == ("noop", False)
    assert any("no changes" in m for m in said), said
    assert asked == []
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == before


# -- an adopted endpoint ---------------------------------------------------------------


def test_cli_update_of_an_adopted_endpoint_sends_nothing(adopted, capsys, sagemaker_harness):
    code, out, err = run(capsys, "update", ADOPTED, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["changed"], doc["changes"]) == (False, [])
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    # Still the owner's config and model, still marked as adopted.
    assert endpoint_state(ADOPTED) == adopted
    assert adopted["tags"]["peagle:origin"] == "adopted"


def test_sdk_update_of_an_adopted_endpoint_sends_nothing(adopted, sagemaker_harness):
    said: list[str] = []
    result = sm_peagle.update(ADOPTED, region=REGION, say=said.append)
    assert (result.changed, result.changes, result.created) == (False, [], [])
    assert any("no changes" in m for m in said), said
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(ADOPTED) == adopted


def test_apply_of_the_adopted_spec_sends_nothing(adopted, capsys, sagemaker_harness, tmp_path):
    sm = boto3.client("sagemaker", region_name=REGION)
    spec = _spec_file(
        tmp_path, deployed_spec(sm, ADOPTED).model_dump(mode="json", exclude_defaults=True)
    )
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(ADOPTED) == adopted


# -- tag round trips -------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"model": "gpt-oss-20b"},
        {"model": "gpt-oss-20b", "region": REGION, "tags": {"team": "x", "cost": "12"}},
        {
            "model": "gpt-oss-20b",
            "speculative": {"mode": "eagle3", "num_speculative_tokens": 5},
            "endpoint": {"name": "ep-1", "instance_count": 2},
            "autoscaling": {"min_instances": 1, "max_instances": 3, "target_concurrency": 4.0},
            "container": {"env": {"EXTRA": "1", "TENSOR_PARALLEL_DEGREE": None}},
        },
    ],
)
def test_spec_to_tags_to_spec_is_the_same_spec(data):
    """What deploy writes and what update/apply read back: equal, and with one hash (the
    hash names the config and model, so a drift here is a new model on every update)."""
    spec = spec_from_data(data)
    p = sm_peagle.plan(spec)
    *_, endpoint_request = tagged_requests(p)
    tags = tag_dict(endpoint_request["Tags"])
    back = spec_from_data(decode_spec(tags))
    # The plan's spec (the region filled from the environment when the data gives none:
    # AWS_REGION may be set here) is what the tags carry and what comes back.
    assert back == p.spec
    assert back.sha256() == p.spec.sha256() == tags["peagle:spec-sha256"]
    assert sm_peagle.plan(back).names == p.names


# -- equal meaning, not equal hash (issue 33, item 3) ------------------------------------
#
# An explicit value equal to what the deployed spec already resolves to is another spec
# (another hash, so other model and config names) but the same requests: nothing is sent
# and the endpoint keeps its tags. The values below are read from what the endpoint runs,
# not from peagle's defaults.


def live_k(name: str) -> int:
    """The K the endpoint's model runs (its container's speculative config)."""
    sm = boto3.client("sagemaker", region_name=REGION)
    config = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    )
    model = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])
    env = model["PrimaryContainer"]["Environment"]
    return json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"]


def live_instance_type(name: str) -> str:
    sm = boto3.client("sagemaker", region_name=REGION)
    config = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    )
    return config["ProductionVariants"][0]["InstanceType"]


def test_update_with_the_default_k_sends_nothing(deployed, capsys, sagemaker_harness):
    """Deployed without -k (the issue: it gets K=3); `update -k 3` names that same K."""
    k = live_k(DEPLOYED)
    assert k == 3  # the report: a deploy without -k runs K=3
    sagemaker_harness.requests.clear()
    code, out, err = run(capsys, "update", DEPLOYED, "-k", str(k), "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["changed"], doc["changes"]) == (False, [])
    assert doc["endpoint_config"] == deployed["config"]
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == deployed  # the same config, inventory and tags


def test_sdk_update_with_the_default_values_sends_nothing(deployed, sagemaker_harness):
    """Every value an update takes, given as what the endpoint already runs."""
    said: list[str] = []
    result = sm_peagle.update(
        DEPLOYED,
        k=live_k(DEPLOYED),
        mode="p-eagle",
        instance_type=live_instance_type(DEPLOYED),
        instance_count=1,
        region=REGION,
        say=said.append,
    )
    assert (result.changed, result.changes, result.created) == (False, [], [])
    assert any("no changes" in m for m in said), said
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == deployed


def test_dry_run_of_the_default_k_says_no_change(deployed, capsys, sagemaker_harness):
    code, out, err = run(capsys, "update", DEPLOYED, "-k", str(live_k(DEPLOYED)), "--dry-run")
    assert code == 0, err
    assert f"{DEPLOYED}: no changes (dry run: nothing sent)" in out.splitlines()
    assert "would change" not in out  # not "would change no changes"
    sagemaker_harness.requests.clear()
    code, out, _ = run(capsys, "update", DEPLOYED, "-k", "3", "--dry-run", "--json")
    doc = json.loads(out)
    assert (doc["changed"], doc["changes"], doc["endpoint_config"]) == (
        False,
        [],
        deployed["config"],
    )
    assert mutating(sagemaker_harness) == []


def _explicit_defaults(k: int, instance_type: str) -> dict:
    """The spec `peagle deploy gpt-oss-20b` deployed, every resolved value spelled out."""
    return {
        "model": "gpt-oss-20b",
        "region": REGION,
        "speculative": {"mode": "p-eagle", "num_speculative_tokens": k},
        "endpoint": {"instance_type": instance_type, "instance_count": 1},
    }


def test_apply_of_a_file_with_the_defaults_spelled_out_sends_nothing(
    deployed, capsys, sagemaker_harness, tmp_path
):
    spec = _spec_file(tmp_path, _explicit_defaults(live_k(DEPLOYED), live_instance_type(DEPLOYED)))
    sagemaker_harness.requests.clear()
    code, out, err = run(capsys, "diff", "-f", str(spec), "--json", "--detailed-exitcode")
    assert code == 0, (out, err)  # --detailed-exitcode: 0 is "no change"
    doc = json.loads(out)
    assert (doc["action"], doc["spec_changes"], doc["request_changes"]) == ("noop", [], [])
    apply_sends_nothing(capsys, sagemaker_harness, spec)
    assert endpoint_state(DEPLOYED) == deployed


def test_apply_of_a_real_change_in_such_a_file_still_updates(
    deployed, capsys, sagemaker_harness, tmp_path
):
    """The control: the same file with another K is a change (so the test above does not
    pass because apply can no longer send anything)."""
    spec = _spec_file(tmp_path, _explicit_defaults(5, live_instance_type(DEPLOYED)))
    code, out, _ = run(capsys, "diff", "-f", str(spec), "--json", "--detailed-exitcode")
    # docs/troubleshooting.md: 3 is "apply would create or change the endpoint"
    assert (code, json.loads(out)["action"]) == (3, "update")
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    assert mutating(sagemaker_harness)[:3] == [
        "CreateModel",
        "CreateEndpointConfig",
        "UpdateEndpoint",
    ]
    assert live_k(DEPLOYED) == 5


@pytest.fixture
def two_components(world, capsys, sagemaker_harness):
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes")
    assert code == 0, err
    sagemaker_harness.requests.clear()
    return endpoint_state(DEPLOYED)


@pytest.mark.parametrize(
    "change",
    [("--mode", "p-eagle"), ("--mode", "p-eagle", "-k", "7")],
    ids=["mode", "mode-and-k"],
)
def test_component_update_with_its_current_values_sends_nothing(
    two_components, capsys, sagemaker_harness, change
):
    """TWO_COMPONENTS deploys component p-eagle with k=7 (`--component p-eagle:k=7`)."""
    assert TWO_COMPONENTS[3:5] == ("--component", "p-eagle:k=7")
    code, out, err = run(capsys, "update", DEPLOYED, "--component", "p-eagle", *change, "--yes")
    assert code == 0, err
    assert "no changes" in out + err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == two_components
    code, out, err = run(
        capsys, "update", DEPLOYED, "--component", "p-eagle", *change, "--dry-run", "--json"
    )
    assert code == 0, err
    assert (json.loads(out)["changed"], json.loads(out)["changes"]) == (False, [])


def test_component_update_of_the_baseline_to_baseline_sends_nothing(
    two_components, capsys, sagemaker_harness
):
    code, out, err = run(
        capsys, "update", DEPLOYED, "--component", "baseline", "--mode", "baseline", "--yes"
    )
    assert code == 0, err
    assert "no changes" in out + err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == two_components


def test_component_update_with_another_k_still_updates(two_components, capsys, sagemaker_harness):
    """The control: another K for the same component is a new model and an update."""
    code, out, err = run(capsys, "update", DEPLOYED, "--component", "p-eagle", "-k", "5", "--yes")
    assert code == 0, err
    sent = mutating(sagemaker_harness)
    assert "CreateModel" in sent and "UpdateInferenceComponent" in sent, sent


def live_component_k(component: str) -> int:
    """The K an inference component's model runs."""
    sm = boto3.client("sagemaker", region_name=REGION)
    ic = sm.describe_inference_component(InferenceComponentName=component)
    model = sm.describe_model(ModelName=ic["Specification"]["ModelName"])
    env = model["PrimaryContainer"]["Environment"]
    return json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"]


def test_component_update_with_the_k_it_was_given_by_default_sends_nothing(
    world, capsys, sagemaker_harness
):
    """A component deployed with no K (it runs the default): `-k` of that K is no change."""
    argv = [a if a != "p-eagle:k=7" else "p-eagle" for a in TWO_COMPONENTS]
    code, _, err = run(capsys, "deploy", *argv, "--yes")
    assert code == 0, err
    before = endpoint_state(DEPLOYED)
    k = live_component_k(f"{DEPLOYED}-p-eagle")
    sagemaker_harness.requests.clear()
    code, out, err = run(
        capsys, "update", DEPLOYED, "--component", "p-eagle", "-k", str(k), "--yes", "--json"
    )
    assert code == 0, err
    assert (json.loads(out)["changed"], json.loads(out)["changes"]) == (False, [])
    assert "no changes" in err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == before


def live_copies(component: str) -> int:
    """The copy count SageMaker is asked to keep for an inference component."""
    sm = boto3.client("sagemaker", region_name=REGION)
    ic = sm.describe_inference_component(InferenceComponentName=component)
    return ic["RuntimeConfig"]["DesiredCopyCount"]


def test_component_copies_it_already_has_sends_nothing(two_components, capsys, sagemaker_harness):
    """`--copies N` with the count the component already keeps: no
    UpdateInferenceComponentRuntimeConfig, one line saying so."""
    copies = live_copies(f"{DEPLOYED}-baseline")
    argv = ("update", DEPLOYED, "--component", "baseline", "--copies", str(copies), "--yes")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert mutating(sagemaker_harness) == []
    assert endpoint_state(DEPLOYED) == two_components
    said = [line for line in (out + err).splitlines() if "no changes" in line]
    assert said == [f"no changes: baseline already has {copies} copies; nothing sent"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert json.loads(out)["changed"] is False
    assert mutating(sagemaker_harness) == []


def test_component_copies_another_count_still_updates(two_components, capsys, sagemaker_harness):
    """The control: another count is sent."""
    copies = live_copies(f"{DEPLOYED}-baseline") + 1
    code, out, err = run(
        capsys, "update", DEPLOYED, "--component", "baseline", "--copies", str(copies), "--yes"
    )
    assert code == 0, err
    assert mutating(sagemaker_harness) == ["UpdateInferenceComponentRuntimeConfig"]
    assert live_copies(f"{DEPLOYED}-baseline") == copies


def test_a_no_change_update_says_so_once(deployed, capsys, sagemaker_harness):
    """One line, not `no changes: …; nothing sent` and then `NAME: no changes`."""
    code, out, err = run(capsys, "update", DEPLOYED, "--yes")
    assert code == 0, err
    said = [line for line in (out + err).splitlines() if "no change" in line]
    assert said == [f"no changes: {DEPLOYED} already runs this spec; nothing sent"], said
