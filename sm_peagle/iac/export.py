"""`peagle export`: the plan's three SageMaker requests as Terraform JSON, a CloudFormation
template, the raw plan, or a `sagemaker` SDK script (export_sagemaker.py).

Every value comes from the requests `deploy` sends (the plan's, with the spec carried in
`peagle:spec:*` tags: planning/spec_tags.py), translated key by key through the tables
below, so what an export creates is a peagle endpoint at once (`update`, `diff`, `delete`).
A plan key a table does not know is an error, not a silently dropped setting: an export
that deploys something other than what `peagle plan` showed would be worse than no export.

Terraform argument names are those of the hashicorp/aws provider docs
(website/docs/r/sagemaker_model.html.markdown, sagemaker_endpoint_configuration and
sagemaker_endpoint, registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/…).
`primary_container.additional_model_data_source` was added in provider 6.22.0 (CHANGELOG
"6.22.0 (November 20, 2025)", PR hashicorp/terraform-provider-aws#44407), hence the
version floor; per-resource `region` exists since 6.0. A plan that sets
`inference_ami_version = "al2023-ami-sagemaker-inference-gpu-4-1"` (CUDA 13 images) needs
a provider whose AWS SDK knows that enum value: see TF_PROVIDER_MIN_CUDA13_AMI.

CloudFormation names are those of the AWS::SageMaker::* resource schemas (checked against
the schemas cfn-lint ships, see tests/unit/test_templates.py). AWS::SageMaker::Model's
ContainerDefinition has no AdditionalModelDataSources, so a deployment with a drafter
channel cannot be expressed in CloudFormation at all; we refuse instead of dropping it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from ..errors import Call, Param, SpecError, text
from ..planning.spec.tags import tagged_requests
from ..vllm.versions import CUDA13_AMI

__all__ = [
    "FORMATS",
    "TF_PROVIDER_MIN",
    "TF_PROVIDER_MIN_CUDA13_AMI",
    "tf_provider_floor",
    "CFN_TABLES",
    "export_document",
    "export_text",
    "tf_resource_id",
    "to_cloudformation",
    "to_terraform",
]

FORMATS = ("terraform", "cloudformation", "json", "sagemaker")
"""The formats `export` writes: Terraform (*.tf.json), CloudFormation, the raw plan as
JSON, and a sagemaker SDK script."""
# First hashicorp/aws release with primary_container.additional_model_data_source.
TF_PROVIDER_MIN = "6.22.0"
# Floor when the plan sets InferenceAmiVersion al2023-ami-sagemaker-inference-gpu-4-1.
# The provider validates the value against its AWS SDK's enum; the value entered the AWS
# API model between botocore 1.42.50 (2026-02-16) and 1.42.75 (2026-03-24) (facts 3).
# The provider's CHANGELOG entries for 2026 were not readable here, so the release is
# inferred from its weekly cadence: 6.31.0 was out by 2026-02-07 (a renovate bump) and
# 6.41.0 on 2026-04-16 (conda-forge build), which puts 6.38.0 at about 2026-03-25, the
# first release after the upper bound. Whether 6.38.0 already vendored an SDK with the
# value cannot be verified, so the floor is the next release, 6.39.0 (about 2026-04-01),
# a week after the upper bound: conservative (later, not earlier).
TF_PROVIDER_MIN_CUDA13_AMI = "6.39.0"

# A table maps a plan key to (output key, kind). kind: None = copy the value as is,
# "map" = copy a str->str mapping, "tags" = [{Key, Value}] list (a map in Terraform),
# a dict = a nested block translated by that table, ("list", dict) = a list of blocks.
Table = dict[str, tuple[str, Any]]


def _same(*names: str, **nested: Any) -> Table:
    """A CloudFormation table: CloudFormation spells properties like the API."""
    table: Table = {n: (n, None) for n in names}
    table.update({n: (n, kind) for n, kind in nested.items()})
    return table


# --- Terraform (hashicorp/aws >= 6.22.0) -------------------------------------------------
_TF_S3: Table = {
    "S3Uri": ("s3_uri", None),
    "S3DataType": ("s3_data_type", None),
    "CompressionType": ("compression_type", None),
    "ModelAccessConfig": ("model_access_config", {"AcceptEula": ("accept_eula", None)}),
}
_TF_CONTAINER: Table = {
    "Image": ("image", None),
    "Environment": ("environment", "map"),
    "ModelDataSource": ("model_data_source", {"S3DataSource": ("s3_data_source", _TF_S3)}),
    "AdditionalModelDataSources": (
        "additional_model_data_source",
        (
            "list",
            {"ChannelName": ("channel_name", None), "S3DataSource": ("s3_data_source", _TF_S3)},
        ),
    ),
}
_TF_MODEL: Table = {
    "ModelName": ("name", None),
    "ExecutionRoleArn": ("execution_role_arn", None),
    "PrimaryContainer": ("primary_container", _TF_CONTAINER),
    "EnableNetworkIsolation": ("enable_network_isolation", None),
    "VpcConfig": (
        "vpc_config",
        {"Subnets": ("subnets", None), "SecurityGroupIds": ("security_group_ids", None)},
    ),
    "Tags": ("tags", "tags"),
}
_TF_VARIANT: Table = {
    "VariantName": ("variant_name", None),
    "ModelName": ("model_name", None),
    "InstanceType": ("instance_type", None),
    "InitialInstanceCount": ("initial_instance_count", None),
    "ContainerStartupHealthCheckTimeoutInSeconds": (
        "container_startup_health_check_timeout_in_seconds",
        None,
    ),
    "ModelDataDownloadTimeoutInSeconds": ("model_data_download_timeout_in_seconds", None),
    "VolumeSizeInGB": ("volume_size_in_gb", None),
    "InferenceAmiVersion": ("inference_ami_version", None),
    "RoutingConfig": ("routing_config", {"RoutingStrategy": ("routing_strategy", None)}),
}
_TF_CONFIG: Table = {
    "EndpointConfigName": ("name", None),
    "ProductionVariants": ("production_variants", ("list", _TF_VARIANT)),
    "KmsKeyId": ("kms_key_arn", None),
    "Tags": ("tags", "tags"),
}
_TF_ENDPOINT: Table = {
    "EndpointName": ("name", None),
    "EndpointConfigName": ("endpoint_config_name", None),
    "Tags": ("tags", "tags"),
}

# --- CloudFormation (only properties the AWS::SageMaker::* schemas define) ---------------
_CFN_S3 = _same("S3Uri", "S3DataType", "CompressionType", ModelAccessConfig=_same("AcceptEula"))
_CFN_CONTAINER = _same("Image", Environment="map", ModelDataSource=_same(S3DataSource=_CFN_S3))
_CFN_MODEL = _same(
    "ModelName",
    "ExecutionRoleArn",
    "EnableNetworkIsolation",
    "Tags",
    PrimaryContainer=_CFN_CONTAINER,
    VpcConfig=_same("Subnets", "SecurityGroupIds"),
)
_CFN_VARIANT = _same(
    "VariantName",
    "ModelName",
    "InstanceType",
    "InitialInstanceCount",
    "ContainerStartupHealthCheckTimeoutInSeconds",
    "ModelDataDownloadTimeoutInSeconds",
    "VolumeSizeInGB",
    "InferenceAmiVersion",
    RoutingConfig=_same("RoutingStrategy"),
)
_CFN_CONFIG = _same(
    "EndpointConfigName", "KmsKeyId", "Tags", ProductionVariants=("list", _CFN_VARIANT)
)
_CFN_ENDPOINT = _same("EndpointName", "EndpointConfigName", "Tags")
# Schema definition name -> the table that must stay within it (the tests check each one
# against the installed cfn-lint's schemas).
CFN_TABLES: dict[tuple[str, str | None], Table] = {
    ("AWS::SageMaker::Model", None): _CFN_MODEL,
    ("AWS::SageMaker::Model", "ContainerDefinition"): _CFN_CONTAINER,
    ("AWS::SageMaker::Model", "S3DataSource"): _CFN_S3,
    ("AWS::SageMaker::EndpointConfig", None): _CFN_CONFIG,
    ("AWS::SageMaker::EndpointConfig", "ProductionVariant"): _CFN_VARIANT,
    ("AWS::SageMaker::Endpoint", None): _CFN_ENDPOINT,
}


def _tf_literal(value: Any) -> Any:
    """Terraform JSON reads every string as a template: escape `${` and `%{` so a value
    such as an environment variable holding "${HOME}" arrives literally."""
    if isinstance(value, str):
        return value.replace("${", "$${").replace("%{", "%%{")
    return value


def _same_value(value: Any) -> Any:
    return value


def _translate(value: dict[str, Any], table: Table, path: str, target: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key not in table:
            raise SpecError(
                f"{target} export: the plan sets {path}.{key}, which {target} cannot express",
                remedy=text(
                    "use `{apply}`, or `{json}` for the raw requests",
                    apply=Call("apply"),
                    json=Param("format", "json"),
                ),
            )
        name, kind = table[key]
        lit = _tf_literal if target == "Terraform" else _same_value
        if kind is None:
            out[name] = lit(item)
        elif kind == "map":
            out[name] = {k: lit(v) for k, v in item.items()}
        elif kind == "tags":
            # Terraform takes tags as a map; CloudFormation keeps the API's list.
            out[name] = (
                {t["Key"]: lit(t["Value"]) for t in item}
                if target == "Terraform"
                else [dict(t) for t in item]
            )
        elif isinstance(kind, tuple):
            out[name] = [
                _translate(v, kind[1], f"{path}.{key}[{i}]", target) for i, v in enumerate(item)
            ]
        else:
            out[name] = _translate(item, kind, f"{path}.{key}", target)
    return out


def tf_resource_id(plan: Any) -> str:
    """Terraform resource name for this deployment: the endpoint name as an identifier."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", plan.names["endpoint"])
    return ident if re.match(r"[A-Za-z_]", ident) else f"peagle_{ident}"


def to_terraform(plan: Any, now: datetime | None = None) -> dict[str, Any]:
    """Terraform JSON (`*.tf.json`): model, endpoint configuration and endpoint (and the
    expiry's schedule, its time fixed at `now`: export_expiry.py)."""
    rid = tf_resource_id(plan)
    (model_req, *_), config_req, endpoint_req = tagged_requests(plan)
    model = _translate(model_req, _TF_MODEL, "CreateModel", "Terraform")
    config = _translate(config_req, _TF_CONFIG, "CreateEndpointConfig", "Terraform")
    endpoint = _translate(endpoint_req, _TF_ENDPOINT, "CreateEndpoint", "Terraform")
    kms = config.get("kms_key_arn")
    if kms is not None and not kms.startswith("arn:"):
        raise SpecError(
            f"Terraform export: kms_key_arn takes a key ARN, network.kms_key_id is {kms!r}",
            remedy="give network.kms_key_id as arn:aws:kms:<region>:<account>:key/<id>",
        )
    # Interpolations instead of literal names, so Terraform orders create/destroy along
    # model -> config -> endpoint; each resolves to exactly the plan's name.
    for variant in config["production_variants"]:
        assert variant["model_name"] == model["name"]
        variant["model_name"] = f"${{aws_sagemaker_model.{rid}.name}}"
    assert endpoint["endpoint_config_name"] == config["name"]
    endpoint["endpoint_config_name"] = f"${{aws_sagemaker_endpoint_configuration.{rid}.name}}"
    for resource in (model, config, endpoint):
        resource["region"] = plan.region  # per-resource region: provider >= 6.0
    floor = tf_provider_floor(plan.create_endpoint_config)
    doc: dict[str, Any] = {
        "//": _provenance(plan),
        "terraform": {
            "required_providers": {"aws": {"source": "hashicorp/aws", "version": f">= {floor}"}}
        },
        "resource": {
            "aws_sagemaker_model": {rid: model},
            "aws_sagemaker_endpoint_configuration": {rid: config},
            "aws_sagemaker_endpoint": {rid: endpoint},
        },
    }
    if getattr(plan, "monitoring", None) is not None:
        from .export_monitoring import TF_PROVIDER_MIN_MONITORING, tf_monitoring

        resources, data, depends = tf_monitoring(plan, rid)
        doc["resource"].update(resources)
        doc["data"] = data
        endpoint["depends_on"] = depends
        floor = max(floor, TF_PROVIDER_MIN_MONITORING, key=_version)
        doc["terraform"]["required_providers"]["aws"]["version"] = f">= {floor}"
    if getattr(plan, "rollout", None) is not None:
        from .export_rollout import rollout_comment, tf_rollout

        block, alarms = tf_rollout(plan, rid)
        if block is not None:
            endpoint["deployment_config"] = block
        if alarms:
            doc["resource"].setdefault("aws_cloudwatch_metric_alarm", {}).update(alarms)
        endpoint["//"] = rollout_comment(plan, terraform=True)  # Terraform JSON's comment
    if getattr(plan, "expiry", None) is not None:
        from .export_expiry import expiry_comment, tf_expiry

        resources, expires = tf_expiry(plan, rid, now)
        for kind, items in resources.items():
            doc["resource"].setdefault(kind, {}).update(items)
        schedule = doc["resource"]["aws_scheduler_schedule"][rid]
        schedule["//"] = expiry_comment(plan, expires, cloudformation=False)
    return doc


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def tf_provider_floor(create_endpoint_config: dict[str, Any]) -> str:
    """The hashicorp/aws floor for this endpoint config (see TF_PROVIDER_MIN_CUDA13_AMI)."""
    variants = create_endpoint_config.get("ProductionVariants", [])
    if any(v.get("InferenceAmiVersion") == CUDA13_AMI for v in variants):
        return TF_PROVIDER_MIN_CUDA13_AMI
    return TF_PROVIDER_MIN


def to_cloudformation(plan: Any, now: datetime | None = None) -> dict[str, Any]:
    """A CloudFormation template; refuses deployments with a drafter channel. The expiry's
    schedule has its time fixed at `now` (export_expiry.py)."""
    extra = plan.create_model["PrimaryContainer"].get("AdditionalModelDataSources", [])
    if extra:
        src = extra[0]
        raise SpecError(
            "CloudFormation cannot express this deployment: AWS::SageMaker::Model has no "
            f"AdditionalModelDataSources property, so drafter channel {src['ChannelName']!r} "
            f"({src['S3DataSource']['S3Uri']}) cannot be mounted",
            remedy=text(
                "use `{export}` or `{apply}`",
                export=Call("export", format="terraform"),
                apply=Call("apply", spec="<spec>"),
            ),
        )
    (model_req, *_), config_req, endpoint_req = tagged_requests(plan)
    model = _translate(model_req, _CFN_MODEL, "CreateModel", "CloudFormation")
    config = _translate(config_req, _CFN_CONFIG, "CreateEndpointConfig", "CloudFormation")
    endpoint = _translate(endpoint_req, _CFN_ENDPOINT, "CreateEndpoint", "CloudFormation")
    # Each resource keeps the plan's name (AWS creates it under that name), and the config
    # and the endpoint reach the model and the config through Fn::GetAtt (ModelName,
    # EndpointConfigName: Ref on these types is the ARN). That orders create and delete
    # without DependsOn, and holds where the names differ: moto's CloudFormation ignores
    # ModelName/EndpointConfigName/EndpointName and generates its own (facts 14).
    for variant in config["ProductionVariants"]:
        assert variant["ModelName"] == model["ModelName"]
        variant["ModelName"] = {"Fn::GetAtt": ["PeagleModel", "ModelName"]}
    assert endpoint["EndpointConfigName"] == config["EndpointConfigName"]
    endpoint["EndpointConfigName"] = {"Fn::GetAtt": ["PeagleEndpointConfig", "EndpointConfigName"]}
    template: dict[str, Any] = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": _provenance(plan) + f" Deploy in {plan.region}: the image is regional.",
        "Resources": {
            "PeagleModel": {"Type": "AWS::SageMaker::Model", "Properties": model},
            "PeagleEndpointConfig": {
                "Type": "AWS::SageMaker::EndpointConfig",
                "Properties": config,
            },
            "PeagleEndpoint": {"Type": "AWS::SageMaker::Endpoint", "Properties": endpoint},
        },
        "Outputs": {
            "EndpointName": {"Value": {"Fn::GetAtt": ["PeagleEndpoint", "EndpointName"]}},
        },
    }
    if getattr(plan, "monitoring", None) is not None:
        from .export_monitoring import cfn_monitoring

        # Today unreachable (a monitored plan drafts, so it has a drafter channel, refused
        # above); kept so lifting that refusal cannot drop the monitoring silently.
        resources, depends = cfn_monitoring(plan)
        template["Resources"].update(resources)
        template["Resources"]["PeagleEndpoint"]["DependsOn"] = depends
    if getattr(plan, "rollout", None) is not None:
        from .export_rollout import cfn_rollout, rollout_comment

        deployment_config, alarms = cfn_rollout(plan)
        if deployment_config is not None:
            endpoint["DeploymentConfig"] = deployment_config
        template["Resources"].update(alarms)
        template["Resources"]["PeagleEndpoint"]["Metadata"] = {
            "peagle:rollout": rollout_comment(plan, terraform=False)
        }
    if getattr(plan, "expiry", None) is not None:
        from .export_expiry import cfn_expiry, expiry_comment

        resources, expires = cfn_expiry(plan, now)
        resources["PeagleExpirySchedule"]["Metadata"] = {
            "peagle:expiry": expiry_comment(plan, expires, cloudformation=True)
        }
        template["Resources"].update(resources)
    return template


def _provenance(plan: Any) -> str:
    from ..version import __version__

    return (
        f"Generated by peagle {__version__} from a {plan.spec.speculative.mode.value} spec "
        f"(sha256 {plan.spec_sha256[:16]}); re-export rather than edit."
    )


def _refuse_unexported(plan: Any, target: str) -> None:
    """Parts of a plan that live outside the three requests: exporting without them
    would deploy something other than the plan, so say so instead."""
    if getattr(plan, "inference_components", None):
        why = {
            "Terraform": "the AWS provider has no aws_sagemaker_inference_component resource "
            "(hashicorp/terraform-provider-aws issue 35226)",
            "CloudFormation": "peagle does not export AWS::SageMaker::InferenceComponent, and "
            "AWS::SageMaker::Model cannot carry a drafter channel",
        }[target]
        raise SpecError(
            f"{target} export cannot express inference components: {why}",
            remedy=text(
                "deploy with `{deploy}`/`{apply}`, or `{json}` for the requests",
                deploy=Call("deploy"),
                apply=Call("apply", spec="<spec>"),
                json=Param("format", "json"),
            ),
        )
    parts = []
    if getattr(plan, "pool_models", None):
        parts.append("capacity fallback pools (endpoint.fallback_instance_types)")
    if getattr(plan, "autoscaling", None):
        parts.append("autoscaling")
    if parts:
        raise SpecError(
            f"{target} export does not cover {' or '.join(parts)} yet",
            remedy=text(
                "deploy with `{apply}`, or `{json}` for the requests",
                apply=Call("apply", spec="<spec>"),
                json=Param("format", "json"),
            ),
        )


def _refuse_unplanned_rollout(plan: Any, target: str) -> None:
    """A spec rollout the plan could not make (its `rollout` check says why): exporting the
    endpoint without it would drop a setting the spec asks for."""
    if getattr(plan, "rollout", None) is None and plan.spec.endpoint.rollout is not None:
        why = next((c for c in plan.checks if c.name == "rollout"), None)
        raise SpecError(
            text(
                "{target} export: the spec's rollout does not fit its endpoint: {why}",
                target=target, why=why.message if why else "not planned",
            ),
            remedy=why.fix if why else None,
            field="rollout",
        )  # fmt: skip


def export_document(plan: Any, fmt: str, now: datetime | None = None) -> dict[str, Any]:
    """The exported document; `now` fixes an expiry's time (default: this machine's UTC
    clock, when the export is written)."""
    if fmt in ("terraform", "cloudformation"):
        _refuse_unplanned_rollout(plan, "Terraform" if fmt == "terraform" else "CloudFormation")
    if fmt == "terraform":
        _refuse_unexported(plan, "Terraform")
        return to_terraform(plan, now)
    if fmt == "cloudformation":
        _refuse_unexported(plan, "CloudFormation")
        return to_cloudformation(plan, now)
    if fmt == "json":
        return plan.to_dict()
    raise SpecError(
        text("{format}: unknown format {fmt!r}", fmt=fmt),
        remedy=f"use one of {', '.join(FORMATS)}",
        field="format",
        value=fmt,
        rule=f"one of {', '.join(FORMATS)}",
    )


def export_text(plan: Any, fmt: str, now: datetime | None = None) -> str:
    """The exported document as written to a file: stable 2-space JSON, trailing newline
    (the sagemaker format is a Python script)."""
    if fmt == "sagemaker":
        from .export_sagemaker import to_sagemaker_script

        return to_sagemaker_script(plan, _provenance(plan))
    return json.dumps(export_document(plan, fmt, now), indent=2) + "\n"
