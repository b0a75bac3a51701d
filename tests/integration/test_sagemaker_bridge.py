"""The `sagemaker` SDK bridge with the real sagemaker-core against the moto harness:
peagle's endpoint as the SDK's resource and back, on one AWS session; a clear error
naming the extra when it is missing; nothing of the SDK loaded by `import sm_peagle`."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import sm_peagle
from sm_peagle.bridge.sagemaker_sdk import SageMakerSdkMissing
from tests.integration.lifecycle_env import REGION, run
from tests.integration.sagemaker_extra import sagemaker_core  # noqa: F401 (fixture)
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"
PEAGLE_COMPONENT = f"{NAME}-p-eagle"
REMEDY = "pip install 'sm-peagle[sagemaker]'"


def deploy(capsys: Any, *argv: str) -> dict:
    code, out, err = run(capsys, "deploy", *argv, "--yes", "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.usefixtures("sagemaker_core", "sagemaker_harness")
def test_to_sagemaker_is_the_same_endpoint_on_peagles_session(world: Any, capsys: Any) -> None:
    from sagemaker.core.resources import Endpoint as SdkEndpoint

    deploy(capsys, "gpt-oss-20b")
    (created,) = world.sent("CreateEndpoint")
    ep = sm_peagle.Endpoint(NAME, region=REGION)

    resource = ep.to_sagemaker()

    assert isinstance(resource, SdkEndpoint)
    assert resource.endpoint_name == NAME
    assert resource.endpoint_config_name == created["EndpointConfigName"]
    assert resource.endpoint_status == ep.status().status == "InService"
    assert resource.endpoint_arn.split(":")[3] == REGION
    # The SDK was handed peagle's own boto3 session (one identity, one region).
    assert resource._session is ep.aws.session
    assert resource._region == REGION


@pytest.mark.usefixtures("sagemaker_core", "sagemaker_harness")
def test_from_sagemaker_attaches_and_reads_status(world: Any, capsys: Any) -> None:
    import boto3
    from sagemaker.core.resources import Endpoint as SdkEndpoint

    deploy(capsys, "gpt-oss-20b")
    session = boto3.session.Session(region_name=REGION)
    resource = SdkEndpoint.get(endpoint_name=NAME, session=session)

    ep = sm_peagle.Endpoint.from_sagemaker(resource)

    assert isinstance(ep, sm_peagle.Endpoint) and ep.name == NAME
    assert ep.aws.session is session and ep.aws.region == REGION
    status = ep.status()
    assert (status.status, status.mode, status.k) == ("InService", "p-eagle", 3)


@pytest.mark.usefixtures("sagemaker_core", "sagemaker_harness")
def test_inference_components_both_ways(world: Any, capsys: Any) -> None:
    from sagemaker.core.resources import InferenceComponent

    deploy(capsys, *[a for a in TWO_COMPONENTS if a != "--scale-to-zero"])
    ep = sm_peagle.Endpoint(NAME, region=REGION)

    component = ep.to_sagemaker(component=PEAGLE_COMPONENT)

    assert isinstance(component, InferenceComponent)
    assert component.inference_component_name == PEAGLE_COMPONENT
    assert component.endpoint_name == NAME
    assert component.inference_component_status == "InService"
    back = sm_peagle.Endpoint.from_sagemaker(component)
    assert back.name == NAME and back.status().status == "InService"
    # The short name deployed with (`--component p-eagle`) names the same component, as
    # on the CLI; one the endpoint does not host is a one-line SpecError.
    short = ep.to_sagemaker(component="p-eagle")
    assert short.inference_component_name == PEAGLE_COMPONENT
    with pytest.raises(sm_peagle.SpecError) as caught:
        ep.to_sagemaker(component="typo")
    assert caught.value.message.startswith(f"endpoint {NAME} has no inference component 'typo'")


@pytest.mark.usefixtures("sagemaker_core", "sagemaker_harness")
def test_from_sagemaker_refuses_other_objects(world: Any) -> None:
    with pytest.raises(sm_peagle.SpecError) as caught:
        sm_peagle.Endpoint.from_sagemaker({"EndpointName": NAME})
    assert caught.value.message == (
        "from_sagemaker takes a sagemaker.core.resources Endpoint or InferenceComponent, not dict"
    )


def test_missing_extra_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import sagemaker.core` raise ImportError, as when the
    # extra is not installed (whether or not it is installed here).
    for name in [m for m in sys.modules if m == "sagemaker" or m.startswith("sagemaker.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sagemaker", None)
    ep = sm_peagle.Endpoint(NAME, region=REGION)
    for call in (ep.to_sagemaker, lambda: sm_peagle.Endpoint.from_sagemaker(object())):
        with pytest.raises(SageMakerSdkMissing) as caught:
            call()
        assert isinstance(caught.value, ImportError)
        assert caught.value.remedy == REMEDY
        line = caught.value.one_line()
        assert line.startswith("the sagemaker SDK bridge needs sagemaker-core (")
        assert line.endswith(f"(fix: {REMEDY})") and "\n" not in line


def test_import_sm_peagle_loads_no_sdk() -> None:
    code = (
        "import sys, sm_peagle\n"
        "sm_peagle.Endpoint, sm_peagle.deploy\n"
        "import sm_peagle.bridge.sagemaker_sdk\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sagemaker'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
