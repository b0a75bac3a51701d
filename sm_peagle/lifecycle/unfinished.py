"""A deployment whose operation did not finish, as `peagle status` shows it.

Read from the operation tags (`lifecycle/operation.py`): an endpoint created by an
operation that never marked it complete, and configs and models tagged with the
deployment that the endpoint does not use (what an interrupted update, or an interrupted
delete, left). Each comes with the command that undoes it, and, where there is one, the
command that finishes it.
"""

from __future__ import annotations

from typing import Any

from ..aws import aws_now
from ..errors import Call, as_text, text
from .operation import COMPLETED, OPERATION, Operation
from .resources import ARNS, KINDS, MANAGED, deployment_resources, models_of, not_found
from .spec_tags import decode_spec, tag_dict

SPEC_SHA = "peagle:spec-sha256"

__all__ = ["unfinished", "unfinished_update", "update_to_finish"]


def _tags_of(sm: Any, kind: str, name: str) -> dict[str, str] | None:
    describe, arg = KINDS[kind][1], KINDS[kind][2]
    try:
        arn = getattr(sm, describe)(**{arg: name})[ARNS[kind]]
        return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))
    except Exception as e:
        if not_found(e):
            return None
        raise


def _state(sm: Any, op: Operation) -> str:
    return "running" if op.may_be_running(aws_now(sm)) else "unfinished"


def update_to_finish(sm: Any, endpoint: dict[str, Any], tags: dict[str, str]) -> str | None:
    """The operation whose update of this endpoint (its DescribeEndpoint answer and its
    tags) took effect but never completed, and is over; None when there is none."""
    found = unfinished_update(sm, endpoint, tags)
    return found[0] if found else None


def unfinished_update(
    sm: Any, endpoint: dict[str, Any], tags: dict[str, str]
) -> tuple[str, dict[str, str]] | None:
    """(`update_to_finish`'s operation, the tags of what it made that the endpoint serves:
    the spec the endpoint should carry). What it made is the serving config for an
    endpoint update; for a component update (`lifecycle.component_update`), which leaves
    the config alone, a component's model: one made by an operation that is over, never
    marked complete on the endpoint and newer than the last one that was (an older one
    was superseded by that one, which finished what came before it)."""
    if tags.get(MANAGED) != "true" or endpoint.get("EndpointStatus") != "InService":
        return None
    try:
        cfg = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
        cfg_tags = tag_dict(sm.list_tags(ResourceArn=cfg["EndpointConfigArn"]).get("Tags", []))
    except Exception as e:
        if not_found(e):
            return None  # a broken endpoint: gc's other rule
        raise
    done = (tags.get(COMPLETED), tags.get(OPERATION))
    op = Operation.from_tags(cfg_tags)
    if op is not None and op.id not in done:
        return None if op.may_be_running(aws_now(sm)) else (op.id, cfg_tags)
    if op is None or any(v.get("ModelName") for v in cfg.get("ProductionVariants", [])):
        return None  # finished, or the deploy that made the endpoint (status names that)
    from .components import component_models, list_components

    last, now = tags.get(COMPLETED) or tags.get(OPERATION) or "", aws_now(sm)
    for model in component_models(sm, list_components(sm, endpoint["EndpointName"])):
        made = _tags_of(sm, "model", model) or {}
        by = Operation.from_tags(made)
        # Ids start with their UTC start time (op-yyyymmddThhmmssZ-…): comparable as text.
        if by is None or by.id in done or by.id[3:19] < last[3:19] or by.may_be_running(now):
            continue
        return by.id, _endpoint_tags(made)
    return None


def _endpoint_tags(model_tags: dict[str, str]) -> dict[str, str]:
    """The tags the endpoint takes from a component model's: the same, but for the spec's
    hash, which on the model is the component's own (`plan.component_models`): the
    endpoint's is the hash of the whole spec the model's tags carry."""
    from ..planning.spec.loading import spec_from_data

    data = decode_spec(model_tags)
    if data is None:
        return model_tags
    return {**model_tags, SPEC_SHA: spec_from_data(data).sha256()}


def _on_endpoint(
    sm: Any, name: str, endpoint: dict[str, Any], in_use: set[str], out: list[dict[str, Any]]
) -> tuple[set[str], dict[str, Any] | None]:
    """The live endpoint's part of `unfinished`: fills `in_use` (its config, its models,
    its components' models) and `out` (an update whose tags lag, a deploy never marked
    complete); returns the operations that completed on it and the lagging entry."""
    tags = _tags_of(sm, "endpoint", name) or {}
    op = Operation.from_tags(tags)
    finished_ops = {v for v in (tags.get(COMPLETED), tags.get(OPERATION)) if v}
    in_use.add(endpoint["EndpointConfigName"])
    in_use.update(models_of(sm, endpoint["EndpointConfigName"]))
    # On an inference-component endpoint the models are the components', not the
    # config's: they are in use too.
    from .components import can_host_components, component_models, list_components

    if can_host_components(sm, name):
        in_use.update(component_models(sm, list_components(sm, name)))
    lagging: dict[str, Any] | None = None
    update_op = update_to_finish(sm, endpoint, tags)
    if update_op is not None:
        lagging = {
            "operation": update_op,
            "owner": None,
            "state": "unfinished",
            "resources": [f"endpoint {name} (its tags lag the spec it serves)"],
            "undo": None,
            "finish": as_text(Call("update", name, yes=True)),
        }
        out.append(lagging)
    if op is not None and not tags.get(COMPLETED):
        running = _state(sm, op) == "running"
        out.append(
            {
                "operation": op.id,
                "owner": op.owner,
                "state": _state(sm, op),
                "resources": [f"endpoint {name}"],
                "undo": as_text(Call("delete", name)),
                "finish": None
                if running
                else text(
                    "{update} (marks it complete once InService)",
                    update=Call("update", name, yes=True),
                ),
            }
        )
    return finished_ops, lagging


def unfinished(sm: Any, name: str, endpoint: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The operations on deployment `name` that did not finish (`endpoint`: its
    DescribeEndpoint answer, None when it is gone), each as {"operation", "state"
    ("running": its process may still be at it; "unfinished": it is over), "resources",
    "undo", "finish"}. Empty when everything finished."""
    out: list[dict[str, Any]] = []
    in_use: set[str] = set()
    finished_ops: set[str] = set()  # operations that completed on this endpoint
    lagging: dict[str, Any] | None = None  # the entry of an update that took effect
    if endpoint is not None:
        finished_ops, lagging = _on_endpoint(sm, name, endpoint, in_use, out)
    configs, models = deployment_resources(sm, name)
    by_op: dict[str, dict[str, Any]] = {}
    for kind, names in (("endpoint_config", configs), ("model", models)):
        for n in names:
            if n in in_use:
                continue
            op = Operation.from_tags(_tags_of(sm, kind, n) or {})
            if op is None and endpoint is not None:
                continue  # an older peagle's, unused: `peagle gc` judges those by age
            what = f"{kind.replace('_', ' ')} {n}"
            if op is not None and op.id in finished_ops:
                # Made by a run that completed, unused now: what an update replaced and
                # did not get to remove. Finishing that update removes it.
                if lagging is None:
                    lagging = {
                        "operation": None,
                        "owner": None,
                        "state": "unfinished",
                        "resources": [],
                        "undo": None,
                        "finish": as_text(Call("update", name, yes=True)),
                    }
                    out.append(lagging)
                lagging["resources"].append(f"unused {what}")
                continue
            key = op.id if op else "(no operation tag)"
            entry = by_op.setdefault(
                key,
                {
                    "operation": op.id if op else None,
                    "owner": op.owner if op else None,
                    "state": _state(sm, op) if op else "unfinished",
                    "resources": [],
                    "undo": as_text(Call("gc", operation=op.id))
                    if op and endpoint is not None
                    else as_text(Call("delete", name)),
                    "finish": None,
                },
            )
            entry["resources"].append(what)
    return out + list(by_op.values())
