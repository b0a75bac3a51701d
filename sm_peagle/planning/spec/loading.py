"""A spec from a file or a dict: parse, apply dotted overrides, validate, and turn
pydantic's error into one line that names the field (`SpecError`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import SpecError
from .model import DeploymentSpec

__all__ = ["load_spec", "merge_overrides", "spec_from_data"]


def _format_one(error: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in error["loc"]) or "spec"
    msg = error["msg"]
    if error["type"] == "extra_forbidden":
        msg = f"unknown key {error['loc'][-1]!r} (not a field of this section; see `peagle schema`)"
    elif error["type"] == "missing" and error["loc"][:1] == ("autoscaling",):
        loc, msg = (
            "autoscaling",
            (
                "a scaling target needs a range: --autoscale MIN:MAX "
                "(or autoscaling.min_instances and max_instances in the spec)"
            ),
        )
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{loc}: {msg}"


def _format_validation_error(err: Any) -> str:
    """Every error, in order, on one line: a user fixes them all in one go."""
    return "; ".join(dict.fromkeys(_format_one(e) for e in err.errors()))


def spec_from_data(data: dict[str, Any]) -> DeploymentSpec:
    """Validate a dict into a spec; raise SpecError naming every bad field."""
    from pydantic import ValidationError

    try:
        return DeploymentSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(
            _format_validation_error(e), remedy="`peagle schema` lists every field and its rules"
        ) from None


def load_spec(path: str | Path, overrides: dict[str, Any] | None = None) -> DeploymentSpec:
    """Load a YAML or JSON spec file, apply dotted-path overrides, and validate."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise SpecError(f"cannot read spec file {str(p)!r}: {e.strerror}") from None
    if p.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpecError(f"{p}: invalid JSON at line {e.lineno}: {e.msg}") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SpecError(f"{p}: invalid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{p}: a spec must be a mapping at the top level")
    return spec_from_data(merge_overrides(data, overrides or {}))


def merge_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Apply {"endpoint.instance_type": "ml.g7e.4xlarge"}-style overrides (None = unset)."""
    out = json.loads(json.dumps(data))
    for dotted, value in overrides.items():
        if value is None:
            continue
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SpecError(f"{dotted}: cannot override inside a non-mapping")
        node[leaf] = value
    return out
