"""`peagle export --format sagemaker`: the plan as a short Python script that creates the
same resources with the `sagemaker` SDK's resource classes (`sagemaker.core.resources`,
from the `sagemaker-core` distribution), for teams whose deployments must go through the
SDK.

Every value comes from the requests `peagle deploy` sends (`planning.spec_tags.
deploy_requests`: the plan's, with the spec carried in `peagle:spec:*` tags), so the
endpoint the script makes is a peagle endpoint at once: `update`, `apply`, `diff` and
`delete` work on it. Keywords are sagemaker-core's: the snake_case of the API member (its
`utils.pascal_to_snake`), and each nested structure is built from the
`sagemaker.core.shapes` class named like its botocore shape (sagemaker-core generates both
from the same service model). The shape of each member is read from
botocore's service model (`planning.aws_shapes`), so nothing is spelled twice. The
top-level keywords of each `create()` are listed below (sagemaker-core 2.27's
signatures): a plan key outside them is an error, never a silently dropped setting.

Covered: the model(s) with AdditionalModelDataSources (the drafter channel), the endpoint
config, the endpoint, and with `endpoint.hosting: inference-components` the component
models and the inference components. Refused, with the reason: autoscaling (Application
Auto Scaling and CloudWatch have no resource classes in sagemaker-core) and a local drafter
head that `deploy` would upload first (the script cannot).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import Call, Param, SpecError, text
from ..planning.spec.tags import deploy_requests

__all__ = ["SDK_REQUIREMENT", "CREATE_KEYWORDS", "snake", "to_sagemaker_script"]

# The distribution and range the script is written for (pyproject's `sagemaker` extra).
SDK_REQUIREMENT = "sagemaker-core>=2.27,<3"
# Operation -> (resource class, the request keys its create() takes), from the create()
# signatures in sagemaker-core 2.27 (sagemaker/core/resources.py).
CREATE_KEYWORDS: dict[str, tuple[str, frozenset[str]]] = {
    "CreateModel": (
        "Model",
        frozenset(
            {
                "ModelName",
                "PrimaryContainer",
                "Containers",
                "InferenceExecutionConfig",
                "ExecutionRoleArn",
                "Tags",
                "VpcConfig",
                "EnableNetworkIsolation",
            }
        ),
    ),
    "CreateEndpointConfig": (
        "EndpointConfig",
        frozenset(
            {
                "EndpointConfigName",
                "ProductionVariants",
                "DataCaptureConfig",
                "Tags",
                "KmsKeyId",
                "AsyncInferenceConfig",
                "ExplainerConfig",
                "ShadowProductionVariants",
                "ExecutionRoleArn",
                "VpcConfig",
                "EnableNetworkIsolation",
                "MetricsConfig",
            }
        ),
    ),
    "CreateEndpoint": (
        "Endpoint",
        frozenset({"EndpointName", "EndpointConfigName", "DeploymentConfig", "Tags"}),
    ),
    "CreateInferenceComponent": (
        "InferenceComponent",
        frozenset(
            {
                "InferenceComponentName",
                "EndpointName",
                "VariantName",
                "Specification",
                "Specifications",
                "RuntimeConfig",
                "Tags",
            }
        ),
    ),
}
_INDENT = "    "


def snake(name: str) -> str:
    """sagemaker-core's `pascal_to_snake` (sagemaker/core/utils/utils.py), verbatim."""
    s = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class _Writer:
    """Renders request values as sagemaker-core constructor calls."""

    def __init__(self) -> None:
        from ..planning.steps.aws_shapes import service_model as _model

        model = _model("sagemaker")
        self.shapes: dict[str, Any] = model["shapes"]
        self.inputs: dict[str, str] = model["operations"]
        self.classes: set[str] = set()

    def value(self, value: Any, shape_name: str, depth: int) -> str:
        shape = self.shapes[shape_name]
        kind = shape["type"]
        pad, inner = _INDENT * depth, _INDENT * (depth + 1)
        if kind == "structure":
            self.classes.add(shape_name)
            members = shape["members"]
            flat = [
                f"{snake(k)}={v!r}"
                for k, v in value.items()
                if self.shapes[members[k]["shape"]]["type"] not in ("structure", "list", "map")
            ]
            one_line = f"{shape_name}({', '.join(flat)})"
            if len(flat) == len(value) and len(pad + one_line) <= 88:
                return one_line
            args = [
                f"{inner}{snake(k)}={self.value(v, members[k]['shape'], depth + 1)},\n"
                for k, v in value.items()
            ]
            return f"{shape_name}(\n{''.join(args)}{pad})"
        if kind == "list":
            member = shape["member"]["shape"]
            items = [f"{inner}{self.value(v, member, depth + 1)},\n" for v in value]
            return f"[\n{''.join(items)}{pad}]" if items else "[]"
        if kind == "map":
            items = [f"{inner}{k!r}: {v!r},\n" for k, v in value.items()]
            return f"{{\n{''.join(items)}{pad}}}" if items else "{}"
        return repr(value)

    def create(self, operation: str, request: dict[str, Any], target: str) -> str:
        """`target = Class.create(...)` for one request."""
        cls, keywords = CREATE_KEYWORDS[operation]
        members = self.shapes[self.inputs[operation]]["members"]
        args = []
        for key, item in request.items():
            if key not in keywords:
                raise SpecError(
                    f"sagemaker export: the plan sets {operation}.{key}, which "
                    f"sagemaker-core's {cls}.create() does not take",
                    remedy=text(
                        "use `{apply}`, or `{json}` for the raw requests",
                        apply=Call("apply"),
                        json=Param("format", "json"),
                    ),
                )
            args.append(f"{_INDENT}{snake(key)}={self.value(item, members[key]['shape'], 1)},\n")
        args.append(f"{_INDENT}session=SESSION,\n{_INDENT}region=REGION,\n")
        return f"{target} = {cls}.create(\n{''.join(args)})\n"


def _refuse(plan: Any) -> None:
    if plan.autoscaling:
        raise SpecError(
            "sagemaker export does not cover autoscaling: sagemaker-core has no resource "
            "classes for Application Auto Scaling or CloudWatch alarms",
            remedy=text(
                "deploy with `{apply}`, or `{json}` for the requests",
                apply=Call("apply", spec="<spec>"),
                json=Param("format", "json"),
            ),
        )
    if getattr(plan, "rollout", None) is not None:
        # Refused, not dropped: the script only creates; a rollout is how updates go.
        raise SpecError(
            "sagemaker export does not cover endpoint.rollout: the script creates the "
            "endpoint, and a rollout says how updates move traffic (their DeploymentConfig "
            "and rollback alarms)",
            remedy=text(
                "update with `{apply}` or `{update}`, export with `{tf}`, or drop the rollout",
                apply=Call("apply", spec="<spec>"),
                update=Call("update", "NAME", rollout="canary"),
                tf=Call("export", format="terraform"),
            ),
            field="rollout",
        )
    if getattr(plan, "expiry", None) is not None:
        # Refused, not dropped: an endpoint the spec says expires would then run until
        # someone remembers it, which is what the TTL is there to prevent.
        raise SpecError(
            "sagemaker export does not cover endpoint.ttl: sagemaker-core has no resource "
            "classes for EventBridge Scheduler schedules or IAM roles",
            remedy=text(
                "deploy with `{deploy}`, export with `{tf}`, or drop the TTL",
                deploy=Call("deploy", ttl="4h"),
                tf=Call("export", format="terraform"),
            ),
            field="ttl",
        )
    if getattr(plan, "monitoring", None) is not None:
        # Refused, not dropped: a script that deployed without the monitoring would leave
        # the endpoint unwatched while the spec says it is.
        raise SpecError(
            "sagemaker export does not cover monitoring: sagemaker-core has no resource "
            "classes for CloudWatch Logs transformers, metric filters, alarms or dashboards",
            remedy=text(
                "deploy with `{apply}`, `{tf}`, or drop monitoring ({monitor})",
                apply=Call("apply", spec="<spec>"),
                tf=Call("export", format="terraform"),
                monitor=Param("monitor", False),
            ),
            field="monitor",
        )
    if plan.drafter_push:
        raise SpecError(
            text(
                "sagemaker export cannot upload the local drafter head "
                "{source}: `{deploy}` pushes it to S3 first",
                source=plan.drafter_push["source"],
                deploy=Call("deploy"),
            ),
            remedy="push the head to S3 yourself and give that s3:// URI as the drafter",
        )


def _drafter_guard(models: list[dict[str, Any]]) -> str:
    """Checks, after each model exists, that its drafter channels arrived: SDK releases
    that dropped AdditionalModelDataSources did so silently (facts 4)."""
    lines = []
    for i, req in enumerate(models):
        sources = req.get("PrimaryContainer", {}).get("AdditionalModelDataSources", [])
        channels = [src["ChannelName"] for src in sources]
        if channels:
            lines.append(f"check_channels(model_{i}, {channels!r})\n")
    return "".join(lines)


_PRELUDE = '''\
"""{provenance}

Creates {what} in {region}
with the sagemaker SDK's resource classes, waits for InService and prints the endpoint name. Needs
`pip install '{requirement}'` and AWS credentials (AWS_PROFILE etc. apply).
SDK defaults from a sagemaker config.yaml fill only arguments this script leaves unset.
"""

import sys

import boto3

try:
    from sagemaker.core.resources import {resources}
    from sagemaker.core.shapes import (
{shapes}
    )
except ImportError:
    sys.exit("this script needs the sagemaker SDK's resource classes: "
             "pip install '{requirement}'")

REGION = {region!r}
SESSION = boto3.session.Session(region_name=REGION)


def check_channels(model, expected):
    """Stop before the endpoint if the model lost its drafter channels."""
    got = [s.channel_name for s in model.primary_container.additional_model_data_sources or []]
    if got != expected:
        sys.exit(f"model {{model.model_name}} has drafter channels {{got}}, expected "
                 f"{{expected}}: delete it and upgrade sagemaker-core")


'''


def to_sagemaker_script(plan: Any, provenance: str) -> str:
    """The script's text (ends with a newline); `provenance` opens its docstring."""
    _refuse(plan)
    w = _Writer()
    requests = deploy_requests(plan)  # exactly what `peagle deploy` sends, spec tags too
    models = [req for op, req in requests if op == "CreateModel"]
    components = [req for op, req in requests if op == "CreateInferenceComponent"]
    ((_, config),) = [(op, req) for op, req in requests if op == "CreateEndpointConfig"]
    ((_, endpoint),) = [(op, req) for op, req in requests if op == "CreateEndpoint"]
    body = [w.create("CreateModel", req, f"model_{i}") for i, req in enumerate(models)]
    body.append(_drafter_guard(models))
    body.append(w.create("CreateEndpointConfig", config, "config"))
    body.append(w.create("CreateEndpoint", endpoint, "endpoint"))
    body.append('endpoint.wait_for_status("InService", poll=30)\n')
    for i, req in enumerate(components):
        body.append(w.create("CreateInferenceComponent", req, f"component_{i}"))
    for i in range(len(components)):
        body.append(f'component_{i}.wait_for_status("InService", poll=30)\n')
    body.append("print(endpoint.endpoint_name)\n")
    resources = ["Endpoint", "EndpointConfig", "Model"] + (
        ["InferenceComponent"] if components else []
    )
    what = f"endpoint {plan.names['endpoint']} (with its model and config" + (
        f", and {len(components)} inference component(s))" if components else ")"
    )
    prelude = _PRELUDE.format(
        provenance=provenance,
        what=what,
        region=plan.region,
        requirement=SDK_REQUIREMENT,
        resources=", ".join(sorted(resources)),
        shapes="".join(f"        {c},\n" for c in sorted(w.classes)).rstrip("\n"),
    )
    return prelude + "".join(body)
