"""`--component` on race, bench, logs and invoke, and `gc` of orphaned inference
components, through the real CLI against the moto harness: the exact requests sent (each
invocation's InferenceComponentName, the log group read), what is refused before any
traffic, and what gc deletes (only what peagle owns)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.testing.moto_components import leftovers
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import REGION, World, left_in_moto, record_requests, run
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"
STREAM = "InvokeEndpointWithResponseStream"
ROLE = "arn:aws:iam::123456789012:role/theirs"


@pytest.fixture
def deployed(world: World, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    """TWO_COMPONENTS deployed; runtime and CloudWatch Logs requests recorded too."""
    record_requests(world, monkeypatch, "sagemaker-runtime", "logs")  # on top of the world's
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes", "--json")
    assert code == 0, err
    world.requests.clear()
    return world


def components_sent(world: World) -> list[str | None]:
    return [p.get("InferenceComponentName") for p in world.sent(STREAM)]


def test_race_sends_each_lane_to_its_component(deployed: World, capsys: Any) -> None:
    code, out, err = run(capsys, "race", NAME, "--component", "p-eagle",
                         "--component", "baseline", "--max-tokens", "8", "--json")  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert (result["a"]["component"], result["b"]["component"]) == (PEAGLE, BASELINE)
    # Lanes are labelled with the short names the user deployed (and typed).
    assert (result["a"]["target"], result["b"]["target"]) == (f"{NAME}/p-eagle", f"{NAME}/baseline")
    assert sorted(components_sent(deployed)) == sorted([PEAGLE, BASELINE])
    assert {p["EndpointName"] for p in deployed.sent(STREAM)} == {NAME}
    # The other syntax sends the same two requests.
    deployed.requests.clear()
    code, out, err = run(capsys, "race", f"{NAME}/p-eagle", f"{NAME}/{BASELINE}", "--json")
    assert code == 0, err
    assert sorted(components_sent(deployed)) == sorted([PEAGLE, BASELINE])


@pytest.mark.parametrize(
    "argv, message",
    [
        (("race", NAME, NAME), "pass --component with one of p-eagle"),
        (("race", f"{NAME}/p-eagle", f"{NAME}/typo"), "no inference component 'typo'"),
        (("race", NAME, "--component", "p-eagle"), "--component twice"),
        (("race", f"{NAME}/", NAME), "is not ENDPOINT or ENDPOINT/COMPONENT"),
        (("race", f"{NAME}/p-eagle", NAME), f"write {NAME}/COMPONENT with one of p-eagle"),
        (
            ("race", "nosuch/a", "nosuch/b"),
            "hosts no inference components (or does not exist); drop /a",
        ),
        (("bench", NAME, "-c", "1", "-n", "1"), "pass --component with one of p-eagle"),
        (("bench", NAME, "--component", "typo", "-n", "1"), "no inference component 'typo'"),
        (("invoke", NAME, "hi"), "pass --component with one of p-eagle"),
        (("logs", NAME, "--component", "typo"), "no inference component 'typo'"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
def test_refused_before_any_traffic(
    deployed: World, capsys: Any, argv: tuple[str, ...], message: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err, err
    assert [line for line in err.splitlines() if line.startswith("error")] == [err.splitlines()[-1]]
    assert deployed.sent(STREAM) == [] and deployed.sent("InvokeEndpoint") == []
    assert deployed.sent("FilterLogEvents") == []


def test_bench_every_request_names_the_component(deployed: World, capsys: Any) -> None:
    # moto serves no invocation, so every request fails: these tests check where the
    # requests go, so any error rate is accepted (--max-error-rate 1).
    code, out, err = run(capsys, "bench", NAME, "--component", "baseline", "-c", "2", "-n", "3",
                         "--acceptance-wait", "0", "--max-error-rate", "1", "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["component"], doc["mode"], doc["k"]) == (BASELINE, "baseline", None)
    sent = components_sent(deployed)
    assert len(sent) >= 3 and set(sent) == {BASELINE}  # warm-up connections included


def test_bench_reads_acceptance_from_the_component_log_group(
    deployed: World, capsys: Any, sagemaker_harness: Any
) -> None:
    code, out, err = run(capsys, "bench", NAME, "--component", PEAGLE, "-c", "1", "-n", "1",
                         "--acceptance-wait", "0", "--max-error-rate", "1", "--json")  # fmt: skip
    assert code == 0, err
    # Two reads (the SpecDecoding lines, windowed here, and the engine's start-up lines for
    # its model runner), both of the component's own log group, never the endpoint's.
    queries = deployed.sent("FilterLogEvents")
    assert len(queries) == 2
    assert {q["logGroupName"] for q in queries} == {f"/aws/sagemaker/InferenceComponents/{PEAGLE}"}


def test_logs_of_a_component_and_after_its_endpoint_is_gone(
    deployed: World, capsys: Any, sagemaker_harness: Any
) -> None:
    sagemaker_harness.seed_logs(NAME, ["INFO endpoint-level line"])
    sagemaker_harness.seed_logs(
        NAME,
        [
            "INFO Starting vLLM API server on http://0.0.0.0:8080",
            "INFO SpecDecoding metrics: Mean acceptance length: 3.41, Accepted: 120 tokens, "
            "Drafted: 249 tokens, Avg Draft acceptance rate: 48.2%",
        ],
        component=PEAGLE,
    )
    code, out, err = run(capsys, "logs", NAME, "--component", "p-eagle", "--json")
    assert code == 0, err
    events = json.loads(out)
    assert [e["spec_decoding"] for e in events] == [
        None,
        {"mean_acceptance_length": 3.41, "draft_acceptance_rate": 0.482},
    ]
    (query,) = deployed.sent("FilterLogEvents")
    assert query["logGroupName"] == f"/aws/sagemaker/InferenceComponents/{PEAGLE}"
    # Without --component: the endpoint's own group, and a note naming the components.
    code, out, err = run(capsys, "logs", NAME, "--json")
    assert [e["message"] for e in json.loads(out)] == ["INFO endpoint-level line"]
    assert "add --component with one of p-eagle" in err
    # The component's logs outlive it and its endpoint.
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    code, out, err = run(capsys, "logs", NAME, "--component", "p-eagle", "--json")
    assert code == 0, err
    assert len(json.loads(out)) == 2


@pytest.mark.parametrize(
    ("options", "flag"),
    [({"until": "SpecDecoding metrics"}, "until="), ({"follow": True}, "follow=")],
)
def test_following_an_endpoint_with_components_is_refused(
    deployed: World, options: dict, flag: str
) -> None:
    """Its container lines are in the components' groups: following the endpoint's group
    for them would never end. Refused before reading any log (the SDK returns a lazy
    stream, so this cannot hang on code that follows)."""
    with pytest.raises(SpecError, match=f"{flag} on the endpoint's") as e:
        sm_peagle.logs(NAME, region=REGION, **options)
    assert "component= with one of p-eagle" in e.value.remedy and "baseline" in e.value.remedy
    assert deployed.sent("FilterLogEvents") == []


def test_following_without_component_is_exit_2_naming_the_components(
    deployed: World, capsys: Any
) -> None:
    code, out, err = run(capsys, "logs", NAME, "--until", "SpecDecoding metrics")
    assert code == 2 and out == ""
    [line] = [ln for ln in err.splitlines() if not ln.startswith("talking to:")]
    assert line.startswith(f"error: {NAME} hosts inference components"), line
    assert (
        "--until on the endpoint's" in line and "(fix: add --component with one of p-eagle" in line
    )
    assert deployed.sent("FilterLogEvents") == []


def test_component_on_a_single_model_endpoint_is_refused(world: World, capsys: Any) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_model(ModelName="m1", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i:1"})
    variant = {"VariantName": "AllTraffic", "ModelName": "m1", "InstanceType": "ml.g7e.2xlarge",
               "InitialInstanceCount": 1}  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="c1", ProductionVariants=[variant])
    sm.create_endpoint(EndpointName="single", EndpointConfigName="c1")
    code, _, err = run(capsys, "invoke", "single", "hi", "--component", "p-eagle")
    assert code == 2 and "endpoint single hosts no inference components" in err
    assert world.sent(STREAM) == []


def _their_orphan(sm: Any, harness: Any) -> None:
    """An inference component peagle did not make, whose endpoint is gone."""
    sm.create_model(ModelName="their-m", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i"})
    variant = {"VariantName": "AllTraffic", "InstanceType": "ml.g7e.12xlarge",
               "InitialInstanceCount": 1}  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName="their-c", ExecutionRoleArn=ROLE, ProductionVariants=[variant]
    )
    sm.create_endpoint(EndpointName="their-e", EndpointConfigName="their-c")
    sm.create_inference_component(
        InferenceComponentName="their-ic",
        EndpointName="their-e",
        VariantName="AllTraffic",
        Specification={"ModelName": "their-m",
                       "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}},
        RuntimeConfig={"CopyCount": 1},
    )  # fmt: skip
    _lose_endpoint(harness, "their-e")


def _lose_endpoint(harness: Any, name: str) -> None:
    """The endpoint is gone while its inference components remain. SageMaker refuses
    DeleteEndpoint in that case (so does the harness), so the state is built in the
    harness's backend directly: it stands for what a crash mid-delete, or an out-of-band
    deletion by another tool or by AWS, leaves behind."""
    from moto.sagemaker.models import sagemaker_backends

    backend = sagemaker_backends["123456789012"][REGION]
    del backend.endpoints[name]
    harness._on_delete(backend, name)  # forget its status schedule, as a delete does


def test_gc_removes_peagle_components_whose_endpoint_is_gone(
    deployed: World, capsys: Any, sagemaker_harness: Any
) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    _their_orphan(sm, sagemaker_harness)
    _lose_endpoint(sagemaker_harness, NAME)  # outside peagle: its components are orphans
    before = leftovers("123456789012", REGION)
    assert before["inference_components"] == sorted([PEAGLE, BASELINE, "their-ic"])

    # peagle's carry the operation that made them, and it is over (the deploy finished in
    # this process), so their age does not protect them: --min-age is for resources
    # without one. A dry run with the default --min-age lists them and deletes nothing.
    code, out, err = run(capsys, "gc", "--dry-run", "--json")
    assert code == 0, err
    doc = json.loads(out)
    (config,) = [c for c in before["endpoint_configs"] if c != "their-c"]
    assert (doc["deleted"], doc["skipped_young"], doc["running"]) == ([], [], {})
    assert doc["inference_components"] == sorted([PEAGLE, BASELINE])
    ours = [m for m in before["models"] if m != "their-m"]
    assert len(ours) == 2 and doc["models"] == ours  # the models only our components used
    assert doc["endpoint_configs"] == [config]
    assert leftovers("123456789012", REGION) == before

    deployed.requests.clear()
    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["deleted"][:2]) == sorted([PEAGLE, BASELINE])
    assert left_in_moto() == {
        "models": ["their-m"],
        "endpoint_configs": ["their-c"],
        "inference_components": ["their-ic"],  # not peagle's: never touched
    }
    deleted = [p["InferenceComponentName"] for p in deployed.sent("DeleteInferenceComponent")]
    assert sorted(deleted) == sorted([PEAGLE, BASELINE])
    ops = [op for op, _ in deployed.requests]
    assert ops.index("DeregisterScalableTarget") < ops.index("DeleteInferenceComponent")
    last_ic = max(i for i, op in enumerate(ops) if op == "DeleteInferenceComponent")
    assert last_ic < ops.index("DeleteEndpointConfig") < ops.index("DeleteModel")
