"""A deployment whose operation did not finish, as `peagle status` shows it.

Read from the operation tags (`lifecycle/operation.py`): an endpoint created by an
operation that never marked it complete, and configs and models tagged with the
deployment that the endpoint does not use (what an interrupted update, or an interrupted
delete, left). Each comes with the command that undoes it, and, where there is one, the
command that finishes it.
"""

from __future__ import annotations

from typing import Any

from .operation import COMPLETED, Operation
from .resources import ARNS, KINDS, deployment_resources, models_of, not_found
from .spec_tags import tag_dict

__all__ = ["unfinished"]


def _tags_of(sm: Any, kind: str, name: str) -> dict[str, str] | None:
    describe, arg = KINDS[kind][1], KINDS[kind][2]
    try:
        arn = getattr(sm, describe)(**{arg: name})[ARNS[kind]]
        return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))
    except Exception as e:
        if not_found(e):
            return None
        raise


def _state(op: Operation) -> str:
    return "running" if op.may_be_running() else "unfinished"


def unfinished(sm: Any, name: str, endpoint: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The operations on deployment `name` that did not finish (`endpoint`: its
    DescribeEndpoint answer, None when it is gone), each as {"operation", "state"
    ("running": its process may still be at it; "unfinished": it is over), "resources",
    "undo", "finish"}. Empty when everything finished."""
    out: list[dict[str, Any]] = []
    in_use: set[str] = set()
    if endpoint is not None:
        tags = _tags_of(sm, "endpoint", name) or {}
        op = Operation.from_tags(tags)
        in_use.add(endpoint["EndpointConfigName"])
        in_use.update(models_of(sm, endpoint["EndpointConfigName"]))
        # On an inference-component endpoint the models are the components', not the
        # config's: they are in use too.
        from .components import can_host_components, component_models, list_components

        if can_host_components(sm, name):
            in_use.update(component_models(sm, list_components(sm, name)))
        if op is not None and not tags.get(COMPLETED):
            out.append(
                {
                    "operation": op.id,
                    "owner": op.owner,
                    "state": _state(op),
                    "resources": [f"endpoint {name}"],
                    "undo": f"peagle delete {name} --yes",
                    "finish": None
                    if _state(op) == "running"
                    else f"peagle update {name} --yes (marks it complete once InService)",
                }
            )
    configs, models = deployment_resources(sm, name)
    by_op: dict[str, dict[str, Any]] = {}
    for kind, names in (("endpoint_config", configs), ("model", models)):
        for n in names:
            if n in in_use:
                continue
            op = Operation.from_tags(_tags_of(sm, kind, n) or {})
            if op is None and endpoint is not None:
                continue  # an older peagle's, unused: `peagle gc` judges those by age
            key = op.id if op else "(no operation tag)"
            entry = by_op.setdefault(
                key,
                {
                    "operation": op.id if op else None,
                    "owner": op.owner if op else None,
                    "state": _state(op) if op else "unfinished",
                    "resources": [],
                    "undo": f"peagle gc --operation {op.id} --yes"
                    if op and endpoint is not None
                    else f"peagle delete {name} --yes",
                    "finish": None,
                },
            )
            entry["resources"].append(f"{kind.replace('_', ' ')} {n}")
    return out + list(by_op.values())
