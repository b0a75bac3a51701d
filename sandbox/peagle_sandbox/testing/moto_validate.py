"""Check a request against botocore's service model, the way AWS's front door does, for the
calls the monitoring harness adds or patches (moto checks few of their members).

botocore's `ParamValidator` checks types, required members and minimums; AWS also checks
maximums, enums and patterns, which botocore's model records but its validator skips. Both
run here, and the first problem is answered with AWS's error: CloudWatch Logs'
`InvalidParameterException` ("1 validation error detected: Value '…' at '…' failed to
satisfy constraint: …", the wording of AWS's validation errors), CloudWatch's
`InvalidParameterValue`. Member paths use AWS's form (`transformerConfig.1.member.grok.match`).

An unknown member (a processor key AWS does not have, say) is refused the same way: boto3
refuses it before sending, so only a client with `parameter_validation=False` or a raw
HTTP caller reaches this. ASSUMPTION: AWS answers such a request with a validation error
of the same exception; its exact wording is not documented.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import botocore.session
from botocore.model import Shape
from botocore.validate import ParamValidator
from moto.cloudwatch.exceptions import InvalidParameterValue
from moto.logs.exceptions import InvalidParameterException

__all__ = ["check_cloudwatch", "check_logs", "problems", "shape_problems", "validation_message"]


@lru_cache(maxsize=8)
def _model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:  # Java-only syntax: botocore does not check it either
        return None


def problems(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    """Every way `params` breaks botocore's model of `operation`, AWS-worded (empty: valid)."""
    shape = _model(service).operation_model(operation).input_shape
    out: list[str] = []
    report = ParamValidator().validate(params, shape)
    if report.has_errors():
        out += [line.strip() for line in report.generate_report().splitlines() if line.strip()]
    out += shape_problems(shape, params, "")
    return out


def _value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def shape_problems(shape: Shape, value: Any, path: str) -> list[str]:
    """Maximums, enums and patterns (what ParamValidator leaves out), recursively."""
    out: list[str] = []
    meta = shape.metadata
    kind = shape.type_name

    def bad(constraint: str) -> None:
        out.append(
            f"Value '{_value(value)}' at '{path}' failed to satisfy constraint: {constraint}"
        )

    if kind == "structure" and isinstance(value, dict):
        for name, member in value.items():
            if name in shape.members:
                sub = f"{path}.{name}" if path else name
                out += shape_problems(shape.members[name], member, sub)
    elif kind == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            bad(f"Member must have length less than or equal to {meta['max']}")
        for i, item in enumerate(value, start=1):
            out += shape_problems(shape.member, item, f"{path}.{i}.member")
    elif kind == "map" and isinstance(value, dict):
        if "max" in meta and len(value) > meta["max"]:
            bad(f"Member must have length less than or equal to {meta['max']}")
        for key, item in value.items():
            out += shape_problems(shape.key, key, f"{path}.key")
            out += shape_problems(shape.value, item, f"{path}.{key}")
    elif kind == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            bad(f"Member must have length less than or equal to {meta['max']}")
        if shape.enum and value not in shape.enum:
            bad(f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
        rx = _regex(meta["pattern"]) if "pattern" in meta else None
        # AWS applies a pattern to the whole value (Java's `matches`).
        if rx is not None and not rx.fullmatch(value):
            bad(f"Member must satisfy regular expression pattern: {meta['pattern']}")
    elif (
        kind in ("integer", "long")
        and isinstance(value, int)
        and not isinstance(value, bool)
        and "max" in meta
        and value > meta["max"]
    ):
        bad(f"Member must have value less than or equal to {meta['max']}")
    return out


def validation_message(found: list[str]) -> str:
    """AWS's one-line summary of validation errors."""
    n = len(found)
    return f"{n} validation error{'s' if n > 1 else ''} detected: " + "; ".join(found)


def check_logs(operation: str, params: dict[str, Any]) -> None:
    """Refuse a CloudWatch Logs request that breaks the model, as AWS does."""
    found = problems("logs", operation, params)
    if found:
        raise InvalidParameterException(msg=validation_message(found))


def check_cloudwatch(operation: str, params: dict[str, Any]) -> None:
    """Refuse a CloudWatch request that breaks the model, as AWS does."""
    found = problems("cloudwatch", operation, params)
    if found:
        raise InvalidParameterValue(validation_message(found))
