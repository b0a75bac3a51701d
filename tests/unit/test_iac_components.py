"""IaC for inference components: Terraform and CloudFormation exports refuse with the
reason (the AWS provider has no aws_sagemaker_inference_component resource, provider
issue 35226), and the execution-role policy covers every component's model."""

from __future__ import annotations

import pytest

from sm_peagle.errors import SpecError
from sm_peagle.iac.export import export_document
from sm_peagle.iac.iam import execution_role_policy
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.options import spec_from_options

ROLE = "arn:aws:iam::123456789012:role/peagle"


@pytest.fixture(scope="module")
def two() -> object:
    return plan(
        spec_from_options(
            "gpt-oss-20b",
            role=ROLE,
            instance_type="ml.g7e.12xlarge",
            components=["p-eagle:k=7", "baseline"],
            accelerators_per_copy=1,
        )
    )


def test_terraform_export_refuses_with_the_reason(two: object) -> None:
    with pytest.raises(SpecError, match="aws_sagemaker_inference_component.*35226"):
        export_document(two, "terraform")


def test_cloudformation_export_refuses(two: object) -> None:
    with pytest.raises(SpecError, match="inference components"):
        export_document(two, "cloudformation")


def test_json_export_carries_the_component_requests(two: object) -> None:
    doc = export_document(two, "json")
    assert len(doc["create_inference_components"]) == 2


def test_execution_role_policy_covers_every_component(two: object) -> None:
    policy = execution_role_policy(two, account="123456789012").policy
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    # The p-eagle component's drafter channel and the shared weights are readable.
    objects = by_sid["ReadModelArtifacts"]["Resource"]
    assert any("gpt-oss-20b-p-eagle" in r for r in objects)
    assert any("inference-prepack" in r for r in objects)
    logs = by_sid["EndpointLogs"]["Resource"]
    assert any(r.endswith(f"/aws/sagemaker/Endpoints/{two.names['endpoint']}:*") for r in logs)
    for ic in two.inference_components:
        assert any(ic["InferenceComponentName"] in r for r in logs)
