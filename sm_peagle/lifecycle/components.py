"""Deploy, roll back, delete and scale inference-component endpoints.

Deploy: models -> endpoint config -> endpoint -> wait for the endpoint -> each component
-> wait for each -> the scale-to-zero requests (policy ARNs substituted into the alarm).
Rollback (`Lifecycle.rollback`) and delete run in reverse: the alarm and scaling policies
and targets, the components (waiting until each is gone), the endpoint, the config, the models.
`Lifecycle.apply`, `Lifecycle.delete` and `Lifecycle.update` call in here for plans and
endpoints that use components; `lifecycle.component_status` reads them back.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

from ..aws import is_not_implemented
from ..errors import Call, DeploymentFailed, DeploymentTimeout, NotFound, text
from ..planning.components.hosting import (
    COPY_DIMENSION,
    component_full_name,
    step_policy_arn_placeholder,
)
from ..planning.plan_result import Plan
from .expiry import arm, check_ttl, start_expiry
from .operation import Operation
from .resources import DeployResult, as_error, is_managed, not_found, tagged_requests
from .waiter import default_timeout, wait_for_endpoint

__all__ = [
    "apply_components",
    "can_host_components",
    "component_model_users",
    "component_models",
    "deregister_component_scaling",
    "list_components",
    "listed_components",
    "find_component",
    "set_copies",
    "split_components",
    "wait_for_component",
]

SCALING = "component_scaling"  # kind of a `created` entry: a component's scaling set
# SageMaker clients whose server answered that it does not implement
# ListInferenceComponents (kept here, not as an attribute set on botocore's object).
_NO_COMPONENTS: weakref.WeakSet[Any] = weakref.WeakSet()


def listed_components(sm: Any, **filters: Any) -> list[dict[str, Any]]:
    """ListInferenceComponents, every page, with `filters` (EndpointNameEquals=...).

    A server that does not implement the call (stock moto) has no components: it cannot
    create one either. So that answer is an empty list, not an error, and the client
    remembers it (each call there costs botocore's retries of a 500)."""
    if sm in _NO_COMPONENTS:
        return []
    try:
        pages = sm.get_paginator("list_inference_components").paginate(**filters)
        return [c for page in pages for c in page["InferenceComponents"]]
    except Exception as e:
        if not is_not_implemented(e):
            raise
        _NO_COMPONENTS.add(sm)
        return []


def list_components(sm: Any, endpoint: str) -> list[str]:
    """Names of the inference components on `endpoint` (none on a single-model one)."""
    return [c["InferenceComponentName"] for c in listed_components(sm, EndpointNameEquals=endpoint)]


def can_host_components(sm: Any, endpoint: str) -> bool:
    """Whether `endpoint` may host inference components: a variant of its config (or of
    the config an update is deploying) names no model. An endpoint whose variants all
    name a model cannot, so there is nothing to list (stock moto, or an identity without
    sagemaker:ListInferenceComponents, never gets asked). When the endpoint or a config
    cannot be read (gone, deleted by hand), the answer is yes: ask SageMaker, as before."""
    try:
        desc = sm.describe_endpoint(EndpointName=endpoint)
    except Exception as e:
        if not_found(e):
            return True
        raise
    configs = [desc["EndpointConfigName"]]
    pending = (desc.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
    if pending:
        configs.append(pending)
    for name in configs:
        try:
            cfg = sm.describe_endpoint_config(EndpointConfigName=name)
        except Exception as e:
            if not_found(e):
                return True
            raise
        variants = cfg.get("ProductionVariants") or []
        if not variants or any(not v.get("ModelName") for v in variants):
            return True
    return False


def component_models(sm: Any, names: list[str]) -> list[str]:
    """The models the components name (an inline container names none)."""
    out = []
    for name in names:
        try:
            spec = sm.describe_inference_component(InferenceComponentName=name)["Specification"]
        except Exception as e:
            if not_found(e):
                continue
            raise
        if spec.get("ModelName"):
            out.append(spec["ModelName"])
    return out


def component_model_users(
    sm: Any, skip: frozenset[str] = frozenset(), skip_endpoints: frozenset[str] = frozenset()
) -> dict[str, set[str]]:
    """{model name: the endpoints whose components use it}; the components in `skip`
    (orphans `gc` deletes first) and those on `skip_endpoints` do not count. Callers use
    `inventory.resource_users`, which adds the endpoint configs' users."""
    users: dict[str, set[str]] = {}
    for c in listed_components(sm):
        if c["InferenceComponentName"] in skip or c["EndpointName"] in skip_endpoints:
            continue
        for model in component_models(sm, [c["InferenceComponentName"]]):
            users.setdefault(model, set()).add(c["EndpointName"])
    return users


def wait_for_component(
    lc: Any, name: str, *, timeout: float, wanted: str = "InService"
) -> dict[str, Any]:
    """Poll DescribeInferenceComponent until `wanted`; Failed raises with its reason."""
    start = time.monotonic()
    interval, last = lc.poll_initial, None
    while True:
        desc = lc.sm.describe_inference_component(InferenceComponentName=name)
        status = desc["InferenceComponentStatus"]
        rc = desc.get("RuntimeConfig", {})
        if status != last:
            lc.say(
                f"component {name}: {status} "
                f"(copies {rc.get('CurrentCopyCount')}/{rc.get('DesiredCopyCount')})"
            )
        if status == wanted:
            return desc
        if status == "Failed":
            reason = desc.get("FailureReason") or "no reason given"
            raise DeploymentFailed(
                f"inference component {name} is Failed: {reason}",
                failure_reason=desc.get("FailureReason"),
                remedy=text("read `{logs}`", logs=Call("logs", "ENDPOINT", component="NAME")),
            )
        if time.monotonic() - start >= timeout:
            raise DeploymentTimeout(
                f"inference component {name} still {status} after {timeout:.0f}s"
            )
        interval = lc.poll_initial if status != last else min(interval * 1.5, lc.poll_max)
        last = status
        lc.sleep(interval)


def tagged_components(plan: Plan) -> tuple[list[dict], list[dict]]:
    """Component models and CreateInferenceComponent requests, with the spec tags."""
    models, _, endpoint = tagged_requests(plan)
    extra = [t for t in endpoint["Tags"] if t not in plan.create_endpoint["Tags"]]
    return (
        [{**m, "Tags": m["Tags"] + extra} for m in plan.component_models],
        [{**ic, "Tags": ic["Tags"] + extra} for ic in plan.inference_components],
    )


def apply_components(
    lc: Any,
    plan: Plan,
    wait: bool = True,
    timeout: float | None = None,
    keep_on_failure: bool = False,
    preflight: bool = True,
    on_poll: Callable[..., None] | None = None,
) -> DeployResult:
    """Create a component endpoint; on any failure remove what this run created."""
    plan.raise_for_failures()
    now = check_ttl(lc.aws, plan)  # a bad TTL: SpecError before the preflight's reads
    if preflight:
        from .preflight import run_preflight

        for c in run_preflight(plan, lc.aws):
            if c.status == "warn":
                lc.say("warning: " + c.line(with_fix=False))
    limit = timeout or default_timeout({"ProductionVariants": [_startup(plan)]})
    op = Operation.start(limit, now := now or lc.aws.synced_aws_now())  # no TTL: read now
    _, config_req, endpoint_req = tagged_requests(plan)
    config_req, endpoint_req = op.stamp(config_req), op.stamp(endpoint_req)
    expiry = start_expiry(lc, plan, op, now, endpoint_req)  # a bad TTL: nothing sent
    model_reqs, component_reqs = (list(map(op.stamp, r)) for r in tagged_components(plan))
    created: list[tuple[str, str]] = []
    trying: list[tuple[str, str]] = []  # the Create* in flight: sent, not yet answered
    start = time.monotonic()
    try:
        if plan.drafter_push:
            lc.push_drafter(plan)
        arm(lc, expiry, created, trying, lc.sleep)  # the components' first; before CreateEndpoint
        for req in model_reqs:
            trying[:] = [("model", req["ModelName"])]
            lc.sm.create_model(**req)
            created.append(trying.pop())
            lc.say(f"created model {req['ModelName']}")
        trying[:] = [("endpoint_config", config_req["EndpointConfigName"])]
        lc.sm.create_endpoint_config(**config_req)
        created.append(trying.pop())
        trying[:] = [("endpoint", endpoint_req["EndpointName"])]
        arn = lc.create_endpoint(endpoint_req)
        created.append(trying.pop())
        lc.say(f"created endpoint {endpoint_req['EndpointName']}")
        desc = wait_for_endpoint(
            lc.sm,
            plan.names["endpoint"],
            timeout=limit,
            on_poll=on_poll,
            poll_initial=lc.poll_initial,
            poll_max=lc.poll_max,
            sleep=lc.sleep,
        )
        for req in component_reqs:
            trying[:] = [("inference_component", req["InferenceComponentName"])]
            lc.sm.create_inference_component(**req)
            created.append(trying.pop())
            lc.say(f"created inference component {req['InferenceComponentName']}")
        for req in component_reqs if wait else []:
            wait_for_component(lc, req["InferenceComponentName"], timeout=limit)
        if plan.autoscaling:
            register_component_scaling(lc, plan, created)
        lc.complete(op, arn)
        return DeployResult(
            plan.names["endpoint"], desc["EndpointStatus"], created, time.monotonic() - start, desc
        )
    except (Exception, KeyboardInterrupt) as exc:
        err = as_error(exc)
        if keep_on_failure:
            lc.say(f"kept for debugging: {', '.join(n for _, n in created + trying)}")
        else:
            lc.rollback(created, plan.names["endpoint"], op=op, in_flight=trying)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise err from None
    finally:
        op.end()


def _startup(plan: Plan) -> dict[str, Any]:
    """The largest start-up windows of the components (for the default timeout)."""
    out: dict[str, Any] = {}
    for ic in plan.inference_components:
        for k, v in ic["Specification"].get("StartupParameters", {}).items():
            out[k] = max(out.get(k, 0), v)
    return out


def register_component_scaling(lc: Any, plan: Plan, created: list[tuple[str, str]]) -> None:
    """The scale-to-zero requests, in order; each component's set is recorded as soon as
    its target exists, so a failure part-way still removes it."""
    aas = lc.aws.client("application-autoscaling")
    arns: dict[str, str] = {}
    for operation, request in plan.autoscaling:
        if operation == "RegisterScalableTarget":
            aas.register_scalable_target(**request)
            created.append((SCALING, request["ResourceId"].split("/", 1)[1]))
            lc.say(f"registered scalable target {request['ResourceId']}")
        elif operation == "PutScalingPolicy":
            arn = aas.put_scaling_policy(**request)["PolicyARN"]
            arns[step_policy_arn_placeholder(request["PolicyName"])] = arn
            lc.say(f"put scaling policy {request['PolicyName']}")
        else:
            actions = [arns.get(a, a) for a in request.get("AlarmActions", [])]
            lc.aws.client("cloudwatch").put_metric_alarm(**{**request, "AlarmActions": actions})
            lc.say(f"put alarm {request['AlarmName']}")


def deregister_component_scaling(lc: Any, name: str) -> None:
    """The alarm, the scaling policies and the scalable target of one component."""
    from botocore.exceptions import BotoCoreError, ClientError

    rid = f"inference-component/{name}"
    try:
        cw = lc.aws.client("cloudwatch")
        alarms = cw.describe_alarms(AlarmNamePrefix=f"{name}-")["MetricAlarms"]
        mine = [
            a["AlarmName"]
            for a in alarms
            if {"Name": "InferenceComponentName", "Value": name} in a.get("Dimensions", [])
        ]
        if mine:
            cw.delete_alarms(AlarmNames=mine)
            lc.say(f"deleted alarm(s) {', '.join(mine)}")
        aas = lc.aws.client("application-autoscaling")
        found = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[rid])
        if not found["ScalableTargets"]:
            return
        pols = aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=rid)
        for pol in pols["ScalingPolicies"]:
            aas.delete_scaling_policy(
                PolicyName=pol["PolicyName"],
                ServiceNamespace="sagemaker",
                ResourceId=rid,
                ScalableDimension=COPY_DIMENSION,
            )
        aas.deregister_scalable_target(
            ServiceNamespace="sagemaker", ResourceId=rid, ScalableDimension=COPY_DIMENSION
        )
        lc.say(f"deregistered autoscaling for {rid}")
    except (ClientError, BotoCoreError) as e:
        lc.say(f"warning: autoscaling for {rid} not checked: {e}")


def split_components(sm: Any, endpoint: str) -> tuple[list[str], list[str]]:
    """The components on `endpoint`: (those peagle created, tagged peagle:managed at
    creation; the others, which someone added outside peagle). A foreign component already
    Deleting is left out: its owner is removing it, and it does not stop DeleteEndpoint.
    Only an endpoint that can host components is asked (`can_host_components`)."""
    mine: list[str] = []
    foreign: list[str] = []
    if not can_host_components(sm, endpoint):
        return mine, foreign
    for c in listed_components(sm, EndpointNameEquals=endpoint):
        if is_managed(sm, c["InferenceComponentArn"]):
            mine.append(c["InferenceComponentName"])
        elif c.get("InferenceComponentStatus") != "Deleting":
            foreign.append(c["InferenceComponentName"])
    return mine, foreign


def find_component(sm: Any, endpoint: str, component: str) -> str:
    """The full name of `endpoint`'s inference component `component` (its short or full
    name); NotFound naming the components there."""
    names = list_components(sm, endpoint)
    full = component_full_name(endpoint, component)
    matches = [n for n in names if n in (component, full)]
    if not matches:
        raise NotFound(
            f"endpoint {endpoint} has no inference component {component!r}",
            remedy=f"components: {', '.join(names) or 'none'}",
        )
    return matches[0]


def set_copies(lc: Any, endpoint: str, component: str, copies: int, timeout: float) -> dict:
    """UpdateInferenceComponentRuntimeConfig and wait; 0 scales the component to zero."""
    name = find_component(lc.sm, endpoint, component)
    try:
        lc.sm.update_inference_component_runtime_config(
            InferenceComponentName=name, DesiredRuntimeConfig={"CopyCount": copies}
        )
    except Exception as exc:
        raise as_error(exc) from None
    return wait_for_component(lc, name, timeout=timeout)
