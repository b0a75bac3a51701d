"""What `peagle gc` may remove, and what it must leave alone.

Garbage is what peagle made (`peagle:managed`, not adopted: `resources.is_collectable`)
that no finished deployment uses:
- endpoints whose deployment did not finish: created by an operation that is over and
  never marked them complete (a deploy killed with SIGKILL, a rollback stopped), or whose
  config or model is missing (deleted by hand, or by an interrupted delete);
- inference components whose endpoint is gone;
- endpoint configs and models that no endpoint (or component) uses, once the endpoints
  above are gone;
- with `aws`: monitoring of an endpoint that no longer exists (or goes in this gc):
  peagle's alarm, dashboard and log group by their tags, and peagle's filters and
  transformer on that group (`lifecycle.monitoring_read.find_orphans`), by the age rule;
- `drafter train`'s jobs that ended Failed or Stopped, with their files in S3
  (`lifecycle/training_gc.py`); a Completed job's head is kept (`training_kept`).

What a run that may still be going made is never garbage, however old: its operation tag
(`lifecycle/operation.py`) says which run made it and whether that run can still be
running; only naming that operation with `force` overrides it. A resource from before
operations were tagged falls back to its age (`min_age_seconds`): younger ones may belong
to a deploy in progress elsewhere. Ages and deadlines are on AWS's clock: the resources'
CreationTime and the `Date` header of AWS's answers (`aws.aws_now`), not this machine's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..aws import aws_now
from .monitoring_read import monitoring_label
from .operation import COMPLETED, OPERATION, Operation
from .reconcile import SETTLING
from .resources import is_collectable, not_found
from .spec_tags import tag_dict
from .unfinished import update_to_finish

__all__ = ["Garbage", "find_garbage"]


@dataclass
class Garbage:
    endpoints: dict[str, str] = field(default_factory=dict)  # name -> why it is garbage
    inference_components: list[str] = field(default_factory=list)
    endpoint_configs: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    young: list[str] = field(default_factory=list)  # untagged, younger than min_age
    running: dict[str, list[str]] = field(default_factory=dict)  # op id -> its resources
    # endpoint -> the update that took effect but never completed (its tags lag the spec
    # it serves): gc finishes it (`lifecycle.reconcile`), which frees the old config/model
    unfinished_updates: dict[str, str] = field(default_factory=dict)
    # endpoint -> (its status, the operation whose update is in flight, if tagged): an
    # endpoint SageMaker is still updating, whose old and new sets gc cannot judge yet
    settling: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # (kind, name, endpoint): monitoring of endpoints that are gone, in deletion order
    monitoring: list[tuple[str, str, str]] = field(default_factory=list)
    # "schedule <group>/<name>" of gone endpoints, then "role peagle-ttl-deleter" once
    # unused (lifecycle/expiry_gc.py)
    expiry: list[str] = field(default_factory=list)
    # training jobs (lifecycle/training_gc.py): job -> why it goes; job -> its s3:// files
    training: dict[str, str] = field(default_factory=dict)
    training_prefixes: dict[str, str | None] = field(default_factory=dict)
    training_kept: dict[str, str] = field(default_factory=dict)  # Completed: its head stays
    training_uploads: dict[str, list[str]] = field(default_factory=dict)  # Completed: go

    @property
    def names(self) -> list[str]:
        """Everything to delete, in deletion order."""
        return [
            *self.endpoints,
            *self.inference_components,
            *self.endpoint_configs,
            *self.models,
            *(monitoring_label(kind, name) for kind, name, _ in self.monitoring),
            *self.expiry,
            *self.training,
            *(uri for uris in self.training_uploads.values() for uri in uris),
        ]


def _paginate(sm: Any, op: str, key: str, **kw: Any) -> list[dict[str, Any]]:
    return [item for page in sm.get_paginator(op).paginate(**kw) for item in page.get(key, [])]


def _tags(sm: Any, arn: str) -> dict[str, str] | None:
    try:
        return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))
    except Exception as e:
        if not_found(e):
            return None  # deleted between the listing and now
        raise


class _Judge:
    """Whether a resource's run may still be going, and whether it is in scope."""

    def __init__(
        self, out: Garbage, now: datetime, min_age: float, operation: str | None, force: bool
    ):
        self.out, self.now, self.operation, self.force = out, now, operation, force
        self.cutoff = now - timedelta(seconds=min_age)

    def collectable(self, name: str, tags: dict[str, str], created: datetime) -> bool:
        op = Operation.from_tags(tags)
        if self.operation is not None and (op is None or op.id != self.operation):
            return False  # gc --operation: that operation's resources only
        if op is not None:
            if op.may_be_running(self.now) and not (self.force and op.id == self.operation):
                self.out.running.setdefault(op.id, []).append(name)
                return False
            return True
        if created > self.cutoff:
            self.out.young.append(name)
            return False
        return True


def _endpoint_problem(
    sm: Any, name: str, tags: dict[str, str]
) -> tuple[str | None, dict[str, Any] | None]:
    """(why a peagle endpoint is garbage, or None: a deployment that never completed, a
    config or model that is missing; its description when it was read, so the caller
    does not describe it again)."""
    if tags.get(OPERATION) and not tags.get(COMPLETED):
        return f"its deployment ({tags[OPERATION]}) never completed", None
    try:
        d = sm.describe_endpoint(EndpointName=name)
    except Exception as e:
        if not_found(e):
            return None, None
        raise
    if d.get("EndpointStatus") in ("Creating", "Updating", "Deleting"):
        return None, d  # SageMaker is still at it: look again later
    try:
        cfg = sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])
    except Exception as e:
        if not_found(e):
            return f"its endpoint config {d['EndpointConfigName']} is missing", d
        raise
    for v in cfg.get("ProductionVariants", []):
        pools = [p.get("ModelNameOverride") for p in v.get("InstancePools", []) or []]
        for model in filter(None, [v.get("ModelName"), *pools]):
            try:
                sm.describe_model(ModelName=model)
            except Exception as e:
                if not_found(e):
                    return f"its model {model} is missing", d
                raise
    return None, d


def _pending_operation(sm: Any, endpoint: dict[str, Any]) -> str | None:
    """The operation that made the config an in-flight update is switching to
    (DescribeEndpoint's PendingDeploymentSummary), None when it is not peagle's."""
    pending = (endpoint.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
    if not pending:
        return None
    try:
        arn = sm.describe_endpoint_config(EndpointConfigName=pending)["EndpointConfigArn"]
    except Exception as e:
        if not_found(e):
            return None
        raise
    op = Operation.from_tags(_tags(sm, arn) or {})
    return op.id if op else None


def find_garbage(
    sm: Any,
    *,
    min_age_seconds: float = 0,
    operation: str | None = None,
    force: bool = False,
    aws: Any = None,
) -> Garbage:
    """What gc would delete (module docstring). `operation`: only its resources; `force`
    (with `operation`): even if it may be running. `aws`: also the monitoring and expiry
    schedules of gone endpoints (not with `operation`: those carry no operation tag)."""
    from .components import listed_components
    from .inventory import resource_users

    out = Garbage()
    live = _paginate(sm, "list_endpoints", "Endpoints")
    # Ages and deadlines on AWS's clock (the Date of the listing's answer), the one that
    # stamped CreationTime and the operations' deadlines, never this machine's.
    judge = _Judge(out, aws_now(sm), min_age_seconds, operation, force)
    for ep in live:
        tags = _tags(sm, ep["EndpointArn"])
        if tags is None or not is_collectable(tags):
            continue
        why, described = _endpoint_problem(sm, ep["EndpointName"], tags)
        if why and judge.collectable(ep["EndpointName"], tags, ep["CreationTime"]):
            out.endpoints[ep["EndpointName"]] = why
        elif not why and operation is None and described is not None:
            if described.get("EndpointStatus") in SETTLING:
                out.settling[ep["EndpointName"]] = (
                    described["EndpointStatus"],
                    _pending_operation(sm, described),
                )
                continue
            op = update_to_finish(sm, described, tags)
            if op is not None:
                out.unfinished_updates[ep["EndpointName"]] = op
    staying = {ep["EndpointName"] for ep in live} - set(out.endpoints)
    # Orphaned components are found by listing them all (their endpoint is gone, so no
    # config says whether it hosted any); on a server without the call (stock moto), none.
    for c in listed_components(sm):
        if c["EndpointName"] in staying or c.get("InferenceComponentStatus") == "Deleting":
            continue
        tags = _tags(sm, c["InferenceComponentArn"])
        if (
            tags
            and is_collectable(tags)
            and judge.collectable(c["InferenceComponentName"], tags, c["CreationTime"])
        ):
            out.inference_components.append(c["InferenceComponentName"])
    used = resource_users(
        sm,
        skip_endpoints=frozenset(out.endpoints),
        skip_components=frozenset(out.inference_components),
    )
    listings = (
        (out.endpoint_configs, "list_endpoint_configs", "EndpointConfigs", "EndpointConfig"),
        (out.models, "list_models", "Models", "Model"),
    )
    for found, op, key, kind in listings:
        for item in _paginate(sm, op, key):
            name = item[f"{kind}Name"]
            if name in used:
                continue
            tags = _tags(sm, item[f"{kind}Arn"])
            if not tags or not is_collectable(tags):
                continue
            if judge.collectable(name, tags, item["CreationTime"]):
                found.append(name)
    _training_then_sort(out, sm, judge, aws)
    if aws is not None and operation is None:
        from .monitoring_read import DENIED, find_orphans

        try:
            out.monitoring = find_orphans(aws, staying, judge.now, min_age_seconds)
        except Exception as e:  # a caller who may not list alarms still collects the rest
            if getattr(e, "response", {}).get("Error", {}).get("Code") not in DENIED:
                raise
        _expiry(out, aws, sm, staying, judge.now)
    return out


def _training_then_sort(out: Garbage, sm: Any, judge: _Judge, aws: Any = None) -> None:
    """`drafter train`'s ended jobs, judged as the rest (lifecycle/training_gc.py), then
    the lists in name order (the judge adds an untagged young job to `young`)."""
    from .training_gc import find_training_garbage

    jobs = find_training_garbage(sm, judge, aws.client("s3") if aws is not None else None)
    out.training, out.training_prefixes, out.training_kept = jobs.jobs, jobs.prefixes, jobs.kept
    out.training_uploads = jobs.uploads
    for names in (out.inference_components, out.endpoint_configs, out.models, out.young):
        names.sort()


def _expiry(out: Garbage, aws: Any, sm: Any, staying: set[str], now: datetime) -> None:
    """The schedules of endpoints and components that are gone (or go in this gc), and
    peagle's role once unused. A caller who may not list schedules collects the rest."""
    from .components import listed_components
    from .expiry_gc import find_expiry_garbage

    going = set(out.inference_components)
    comps = {c["InferenceComponentName"] for c in listed_components(sm)} - going
    try:
        out.expiry = find_expiry_garbage(aws, staying, comps, now)
    except Exception as e:
        if "AccessDenied" not in str(getattr(e, "response", {}).get("Error", {}).get("Code")):
            raise
