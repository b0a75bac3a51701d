"""Validate request dicts against botocore's own service model, offline and cheaply.

botocore's ParamValidator checks types, required members and minimums but not patterns,
enums or maximums, and loading the SageMaker model plus `botocore.validate` costs about
190 ms, more than the whole `peagle plan` budget. So this module reads the same
`service-2.json.gz` botocore ships (found without importing botocore), keeps the shapes
reachable from the operations peagle sends, and checks type, required, min/max, enum and
pattern. It writes nothing: the impure layer installs a loader that keeps the slice on
disk (`lifecycle/shape_cache.py`, keyed by `slice_key`), so a plan stays fast.
The tests also run botocore's own ParamValidator on every plan, so both agree.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...checks import Check, failed, passed

__all__ = [
    "OPERATIONS",
    "check_request_shapes",
    "service_model",
    "shape_enum",
    "validate_request",
]

OPERATIONS: dict[str, tuple[str, ...]] = {
    "sagemaker": (
        "CreateModel",
        "CreateEndpointConfig",
        "CreateEndpoint",
        "UpdateEndpoint",
        "DeleteEndpoint",
        "CreateInferenceComponent",
        "UpdateInferenceComponent",
        "UpdateInferenceComponentRuntimeConfig",
        # `drafter train` (sm_peagle/training/request.py)
        "CreateTrainingJob",
    ),
    "application-autoscaling": ("RegisterScalableTarget", "PutScalingPolicy"),
    "cloudwatch": ("PutMetricAlarm", "PutDashboard"),
    "logs": ("CreateLogGroup", "PutRetentionPolicy", "PutTransformer", "PutMetricFilter"),
    # `endpoint.ttl` (planning/steps/expiry.py): the schedules (UpdateSchedule takes the
    # whole CreateSchedule request) and peagle's deleting role.
    "scheduler": ("CreateScheduleGroup", "CreateSchedule", "UpdateSchedule"),
    "iam": ("CreateRole", "PutRolePolicy"),
}
# Shapes looked up by name (enums the catalog checks against).
EXTRA_SHAPES = {"sagemaker": ("ProductionVariantInstanceType", "TrainingInstanceType")}


def _service_file(service: str) -> Path:
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("botocore is not installed")
    root = Path(list(spec.submodule_search_locations)[0]) / "data" / service
    versions = sorted(p for p in root.iterdir() if p.is_dir())
    for v in reversed(versions):
        for name in ("service-2.json.gz", "service-2.json"):
            if (v / name).exists():
                return v / name
    raise RuntimeError(f"botocore has no service model for {service}")


def _reachable(shapes: dict, roots: list[str]) -> dict:
    out: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out or name not in shapes:
            continue
        shape = shapes[name]
        out[name] = {
            k: shape[k]
            for k in (
                "type",
                "required",
                "members",
                "member",
                "key",
                "value",
                "min",
                "max",
                "enum",
                "pattern",
            )
            if k in shape
        }
        if "members" in shape:
            out[name]["members"] = {m: {"shape": s["shape"]} for m, s in shape["members"].items()}
            todo += [s["shape"] for s in shape["members"].values()]
        for k in ("member", "key", "value"):
            if k in shape:
                out[name][k] = {"shape": shape[k]["shape"]}
                todo.append(shape[k]["shape"])
    return out


def slice_key(service: str) -> str:
    """A name for `service`'s slice that changes with botocore's file (size, mtime) and
    with the operation list (a slice made for fewer operations is stale)."""
    st = _service_file(service).stat()
    ops_key = hashlib.sha256(",".join(OPERATIONS[service]).encode()).hexdigest()[:8]
    return f"{service}-{st.st_size}-{int(st.st_mtime)}-{ops_key}.json"


def slice_service(service: str) -> dict:
    """The slice of botocore's `service-2.json` for `service` that OPERATIONS need."""
    src = _service_file(service)
    raw = src.read_bytes()
    full = json.loads(gzip.decompress(raw) if src.suffix == ".gz" else raw)
    ops = {op: full["operations"][op]["input"]["shape"] for op in OPERATIONS[service]}
    return {
        "operations": ops,
        "shapes": _reachable(
            full["shapes"], list(ops.values()) + list(EXTRA_SHAPES.get(service, ()))
        ),
    }


_loader: Callable[[str], dict] = slice_service


def use_loader(loader: Callable[[str], dict]) -> None:
    """Install where slices come from (a disk cache, say); the default computes them."""
    global _loader
    if loader is not _loader:
        _loader = loader
        service_model.cache_clear()


def current_loader() -> Callable[[str], dict]:
    return _loader


@lru_cache(maxsize=4)
def service_model(service: str) -> dict:
    """The slice of botocore's model for `service`, from the installed loader."""
    return _loader(service)


def shape_enum(service: str, shape: str) -> frozenset[str]:
    return frozenset(service_model(service)["shapes"].get(shape, {}).get("enum", ()))


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # Java-only syntax (\p{…}); botocore does not check patterns either


def _check(shapes: dict, shape_name: str, value: Any, path: str, errors: list[str]) -> None:
    shape = shapes[shape_name]
    kind = shape["type"]
    if kind == "structure":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping")
            return
        members = shape.get("members", {})
        for req in shape.get("required", []):
            if req not in value:
                errors.append(f"{path}.{req}: required")
        for k, v in value.items():
            if k not in members:
                errors.append(f"{path}.{k}: unknown parameter")
            else:
                _check(shapes, members[k]["shape"], v, f"{path}.{k}", errors)
        return
    if kind == "list":
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list")
            return
        _bounds(shape, len(value), path, errors, "entries")
        for i, item in enumerate(value):
            _check(shapes, shape["member"]["shape"], item, f"{path}[{i}]", errors)
        return
    if kind == "map":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping")
            return
        _bounds(shape, len(value), path, errors, "entries")
        for k, v in value.items():
            _check(shapes, shape["key"]["shape"], k, f"{path} key {k!r}", errors)
            _check(shapes, shape["value"]["shape"], v, f"{path}.{k}", errors)
        return
    if kind == "string":
        if not isinstance(value, str):
            errors.append(f"{path}: expected a string")
            return
        _bounds(shape, len(value), path, errors, "characters")
        if "enum" in shape and value not in shape["enum"]:
            errors.append(f"{path}: {value!r} is not one of {len(shape['enum'])} allowed values")
        rx = _regex(shape["pattern"]) if "pattern" in shape else None
        # AWS applies these patterns to the whole value (Java `matches`), although many
        # are written without a trailing `$`: 'a_b' fails ModelName's pattern in AWS.
        if rx is not None and not rx.fullmatch(value):
            errors.append(f"{path}: {value!r} does not match {shape['pattern']}")
        return
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: expected an integer")
            return
        _bounds(shape, value, path, errors, "")
        return
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            errors.append(f"{path}: expected a number")
        return
    if kind == "boolean" and not isinstance(value, bool):
        errors.append(f"{path}: expected true or false")


def _bounds(shape: dict, n: int, path: str, errors: list[str], unit: str) -> None:
    suffix = f" {unit}" if unit else ""
    if "min" in shape and n < shape["min"]:
        errors.append(f"{path}: {n}{suffix} is below the minimum {shape['min']}")
    if "max" in shape and n > shape["max"]:
        errors.append(f"{path}: {n}{suffix} is above the maximum {shape['max']}")


def validate_request(service: str, operation: str, params: dict) -> list[str]:
    """Every way `params` breaks botocore's model for `operation` (empty = valid)."""
    model = service_model(service)
    errors: list[str] = []
    _check(model["shapes"], model["operations"][operation], params, operation, errors)
    return errors


def _rollout_errors(p: Any) -> list[str]:
    """The next update's requests (`endpoint.rollout`): its DeploymentConfig on
    UpdateEndpoint (UpdateInferenceComponent on a component endpoint) and its alarms."""
    rollout = getattr(p, "rollout", None)
    if rollout is None:
        return []
    errors = [
        e for a in rollout.alarms for e in validate_request("cloudwatch", "PutMetricAlarm", a)
    ]
    if rollout.deployment_config is not None:
        if rollout.component:
            name = p.inference_components[0]["InferenceComponentName"]
            op, request = "UpdateInferenceComponent", {"InferenceComponentName": name}
        else:
            op, request = "UpdateEndpoint", {
                "EndpointName": rollout.endpoint, "EndpointConfigName": rollout.new_config,
            }  # fmt: skip
        request["DeploymentConfig"] = rollout.deployment_config
        errors += validate_request("sagemaker", op, request)
    return errors


def _expiry_errors(p: Any) -> list[str]:
    """The expiry's schedules (as CreateSchedule and, whole, as UpdateSchedule: `update
    --ttl` sends the same request) at a sample instant, and the role's requests."""
    expiry = getattr(p, "expiry", None)
    if expiry is None:
        return []
    return [
        *(
            e
            for r in expiry.sample_schedules
            for op in ("CreateSchedule", "UpdateSchedule")
            for e in validate_request("scheduler", op, r)
        ),
        *(
            e
            for r in expiry.group_requests
            for e in validate_request("scheduler", "CreateScheduleGroup", r)
        ),
        *(e for op, r in expiry.role_requests for e in validate_request("iam", op, r)),
    ]


def check_request_shapes(p: Any) -> Check:
    """Every request of plan `p` against botocore's model: one check naming the first
    errors, so a plan that AWS would reject fails here instead."""
    shape_errors = [
        *validate_request("sagemaker", "CreateModel", p.create_model),
        *[e for m in p.pool_models for e in validate_request("sagemaker", "CreateModel", m)],
        *validate_request("sagemaker", "CreateEndpointConfig", p.create_endpoint_config),
        *validate_request("sagemaker", "CreateEndpoint", p.create_endpoint),
        *[
            e
            for service, operation, request in (p.monitoring.requests() if p.monitoring else [])
            for e in validate_request(service, operation, request)
        ],
        *_rollout_errors(p),
        *_expiry_errors(p),
    ]
    if shape_errors:
        return failed(
            "aws.request_shapes", "; ".join(shape_errors[:3]), "fix the field named above"
        )
    return passed("aws.request_shapes", "all requests pass botocore's service model")
