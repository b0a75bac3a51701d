"""The requests of a plan as text, for people: `peagle plan` (and `deploy --dry-run`)
prints every request `deploy` would send, in its order, one field per line.

Line-oriented on purpose: a value (an S3 URI, an image URI, the speculative config's
JSON) is always whole on its own line, so a terminal may soft-wrap it but nothing here
breaks it, and a copied value is the value sent. The JSON of `--json` is the same data
(`Plan.to_dict()`); this is its readable form. Pure: no rich, no I/O.
"""

from __future__ import annotations

from typing import Any

__all__ = ["expiry_text", "request_lines", "requests_text", "rollout_text"]

_INDENT = "  "


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if value == "":
        return '""'  # an empty string must not read as a missing value
    return str(value)


def _is_tag_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, dict) and set(t) == {"Key", "Value"} for t in value)
    )


def request_lines(value: Any, depth: int = 1) -> list[str]:
    """`value` (a request or part of one) as `Key: value` lines, nested by indentation;
    list items start with `- `; a Tags list reads `- key: value`."""
    pad = _INDENT * depth
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if _is_tag_list(item):
                lines.append(f"{pad}{key}:")
                lines += [f"{pad}{_INDENT}- {t['Key']}: {_scalar(t['Value'])}" for t in item]
            elif isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines += request_lines(item, depth + 1)
            elif isinstance(item, dict | list):
                lines.append(f"{pad}{key}: {'{}' if isinstance(item, dict) else '[]'}")
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return lines
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list) and item:
                nested = request_lines(item, depth + 1)
                # The first field goes on the dash's line, the rest under it.
                lines.append(f"{pad}- {nested[0].lstrip()}")
                lines += nested[1:]
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return lines
    return [f"{pad}{_scalar(value)}"]


def _camel(operation: str) -> str:
    """`register_scalable_target` -> `RegisterScalableTarget` (CamelCase stays)."""
    if "_" not in operation:
        return operation
    return "".join(part.capitalize() for part in operation.split("_"))


def _requests(p: Any) -> list[tuple[str, dict[str, Any]]]:
    """(heading, request) in the order `deploy` sends them (lifecycle/manager.py and
    planning/spec/tags.deploy_requests): the models, the config, the monitoring (before
    the endpoint, so SageMaker never writes to its log group first), the endpoint, then
    the inference components and the autoscaling registered once it is in service. With a
    TTL the schedules come first (and the groups and role they need), so an interrupted
    deploy still expires."""
    out: list[tuple[str, dict[str, Any]]] = _expiry_requests(p)
    if p.inference_components:
        out += [("CreateModel", m) for m in p.component_models]
    else:
        out.append(("CreateModel", p.create_model))
        out += [("CreateModel  (capacity fallback pool)", m) for m in p.pool_models]
    out.append(("CreateEndpointConfig", p.create_endpoint_config))
    if p.monitoring is not None:
        out += _monitoring(p.monitoring)
    out.append(("CreateEndpoint", p.create_endpoint))
    for ic in p.inference_components:
        name = ic.get("InferenceComponentName", "")
        origin = _component_origin(p, name)
        out.append((f"CreateInferenceComponent{origin}", ic))
    for operation, request in p.autoscaling:
        out.append((f"{_camel(operation)}  (application-autoscaling, once InService)", request))
    return out


def _expiry_requests(p: Any) -> list[tuple[str, dict[str, Any]]]:
    e = getattr(p, "expiry", None)
    if e is None:
        return []
    out: list[tuple[str, dict[str, Any]]] = [
        (f"CreateScheduleGroup  (scheduler; only if {g['Name']} does not exist)", g)
        for g in e.group_requests
    ]
    out += [
        (f"{op}  (iam; only if the role does not exist yet)", request)
        for op, request in e.role_requests
    ]
    for request in e.schedules:
        what = "component" if "InferenceComponentName" in request["Target"]["Input"] else "endpoint"
        out.append((f"CreateSchedule  (scheduler; deletes the {what} at its expiry)", request))
    return out


# What each monitoring request's heading says beyond the operation: its service, and when
# deploy sends it (lifecycle/monitoring.py).
_MONITORING_NOTES = {
    "CreateLogGroup": "logs; only if the group does not exist: peagle then owns it",
    "PutRetentionPolicy": "logs; only on a group peagle creates",
    "PutTransformer": "logs",
    "PutMetricFilter": "logs",
    "PutMetricAlarm": "cloudwatch",
    "PutDashboard": "cloudwatch; deploy puts the caller's account in the alarm widget",
}


def _monitoring(m: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{op}  ({_MONITORING_NOTES[op]})", req) for _, op, req in m.requests()]


def _component_origin(p: Any, component: str) -> str:
    """`  p-eagle, K=7 (given with -k or in the spec)` for a component whose K the plan
    knows (a baseline component has none)."""
    for short, origin in p.component_k_origins.items():
        if component == short or component.endswith(f"-{short}"):
            from .faces import cli_text  # the reason may name a keyword (-k)

            return f"  {short}, {cli_text(origin.describe())}"
    return ""


def requests_text(p: Any) -> list[str]:
    """Every request of plan `p` as lines: a heading per request (the API operation), its
    fields under it."""
    lines = [
        "Requests deploy sends, in order (`--json` has them as JSON)",
        "  (deploy adds its peagle:spec:* and peagle:operation* tags as it sends them)",
    ]
    for heading, request in _requests(p):
        lines.append(heading)
        lines += request_lines(request)
    return lines + expiry_text(p) + rollout_text(p)


def expiry_text(p: Any) -> list[str]:
    """`endpoint.ttl`: when the endpoint expires (a plan has no deploy time: "deploy start +
    4h"), the role the schedules run as and its two policies, the tags, and the notes."""
    e = getattr(p, "expiry", None)
    if e is None:
        return []
    role = f"{e.role_arn} (peagle's: made on first use, reused)" if e.own_role else (
        f"{e.role_arn} (given: used as it is, never edited)"
    )  # fmt: skip
    lines = [
        "",
        "Expiry (endpoint.ttl; the CreateSchedule requests are above)",
        f"  expires: {e.expires}",
        f"  role: {role}",
        "  trust policy:",
        *request_lines(e.trust_policy, depth=2),
        "  permission policy:",
        *request_lines(e.permission_policy, depth=2),
        "  endpoint tags (with CreateEndpoint):",
        *(f"    - {t['Key']}: {t['Value']}" for t in e.tags),
    ]
    return lines + [f"  note: {n}" for n in e.notes]


def _step_line(step: Any, unit: str) -> str:
    share = f"{step.share:.0%} of the {unit} on the new fleet"
    if step.final:
        return f"{share}: final bake {step.bake_s} s (TerminationWaitInSeconds)"
    return f"{share}: bake {step.bake_s} s"


def rollout_text(p: Any) -> list[str]:
    """`endpoint.rollout` as the next update would send it: its steps, the exact
    DeploymentConfig for the spec's fleet, the rollback alarms and what plan left out.
    Deploy sends none of it (CreateEndpoint takes no DeploymentConfig)."""
    r = getattr(p, "rollout", None)
    if r is None:
        return []
    unit = "copies" if r.component else "instances"
    operation = "UpdateInferenceComponent" if r.component else "UpdateEndpoint"
    lines = [
        "",
        "Rollout of the next update (endpoint.rollout; deploy sends none of it)",
        f"  strategy: {r.strategy}, over {r.fleet} {unit} (the spec's; update reads the live "
        "count)",
        "  steps:",
        *[f"    - {_step_line(s, unit)}" for s in r.steps],
    ]
    if r.deployment_config is None:
        lines.append(f"  {operation} without DeploymentConfig (nothing to watch)")
    else:
        lines.append(f"{operation}  (DeploymentConfig; by update, not deploy)")
        lines += request_lines({"DeploymentConfig": r.deployment_config})
    for alarm in r.alarms:
        lines.append("PutMetricAlarm  (cloudwatch; by update before UpdateEndpoint, deleted after)")
        lines += request_lines(alarm)
    lines += [f"  note: {n}" for n in r.notes]
    return lines
