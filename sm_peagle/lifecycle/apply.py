"""Declarative deploys: make the endpoint match a spec file, idempotently.

The deployed spec is read back from the endpoint's own tags (see spec_tags), so `apply`
from CI on any machine compares what is live with what is in git:
- no endpoint -> create it;
- same `peagle:spec-sha256`, or a spec that sends the same requests (defaults filled
  in: `k: 3` where the deployed spec leaves K to its default 3) -> nothing to do;
- otherwise -> show the spec and request diff, then update in place (new model + config,
  UpdateEndpoint; the old ones are removed only after success).

Monitoring (`monitoring:`) is outside the spec hash and tags: its live alarm, dashboard,
filters and log group are its record (`lifecycle.monitoring.read_monitoring`). A spec
whose only change is monitoring is an update that sends nothing to SageMaker
(`ApplyPlan.monitoring_only`): only the CloudWatch Logs and CloudWatch requests that
differ. A spec without a `monitoring` section leaves the live monitoring as it is.

The rollout (`endpoint.rollout`) is outside them too, and has no live record at all: it
says how the next update moves traffic, not what runs. It is never a change; a spec that
has one says so (`ApplyPlan.rollout_note`), and an update apply makes uses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..planning.adopt.compare import flatten  # the one flatten (its empty-value rule)
from ..planning.meaning import same_meaning
from ..planning.plan_result import Plan

# Parts of a request that differ by construction (hash-derived names, tags), not intent.
_IGNORED = ("Tags", "ModelName", "EndpointConfigName")
# Spec sections that are not the deployed spec (no hash, no tag): never a spec change.
_NOT_DEPLOYED: Any = {"monitoring": True, "endpoint": {"rollout"}}


@dataclass(frozen=True)
class Change:
    path: str
    old: Any
    new: Any

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new}


@dataclass
class ApplyPlan:
    action: str  # "create" | "noop" | "update"
    plan: Plan
    spec_changes: list[Change] = field(default_factory=list)
    request_changes: list[Change] = field(default_factory=list)
    # The live endpoint when it carries this deployment's tags under another name (a
    # CloudFormation stack that named it itself); None when it has the plan's name.
    live_name: str | None = None
    # The monitoring the endpoint should have (None: none), and True when monitoring is
    # all that changes: apply then sends nothing to SageMaker.
    monitoring: Any = field(default=None, repr=False)
    monitoring_only: bool = False
    # True when the update sends UpdateEndpoint (a new spec hash, so a new config); tags or
    # monitoring alone do not, and the spec's rollout then waits for the next update.
    new_config: bool = False

    @property
    def rollout_note(self) -> str | None:
        """What the spec's rollout does here: nothing now when nothing else changes (it
        applies to the next update), else how this update moves traffic; None without one."""
        r = self.plan.spec.endpoint.rollout
        if r is None or self.action == "create":  # a new endpoint has no fleet to shift from
            return None
        if self.new_config:
            return f"this update rolls out {r.strategy}"
        return f"the rollout ({r.strategy}) applies to the next update; nothing sent for it"

    @property
    def endpoint(self) -> str:
        """The endpoint compared: the live one's name, else the plan's."""
        return self.live_name or self.plan.names["endpoint"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "action": self.action,
            "spec_changes": [c.to_dict() for c in self.spec_changes],
            "request_changes": [c.to_dict() for c in self.request_changes],
            # only with a rollout in the spec: documents without one stay as they were
            **({"rollout": self.rollout_note} if self.rollout_note else {}),
        }


def diff(old: Any, new: Any) -> list[Change]:
    a, b = flatten(old), flatten(new)
    return [Change(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def request_view(p: Plan) -> dict[str, Any]:
    """The requests with hash-derived names and tags left out."""

    def strip(req: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in req.items() if k not in _IGNORED}
        if "ProductionVariants" in out:
            out["ProductionVariants"] = [
                {k: v for k, v in variant.items() if k != "ModelName"}
                for variant in out["ProductionVariants"]
            ]
        return out

    return {
        "create_model": strip(p.create_model),
        "create_endpoint_config": strip(p.create_endpoint_config),
    }


def compare(new: Plan, aws: Any) -> ApplyPlan:
    """What `apply` would do for `new`, read from the live endpoint (describe + tags)."""
    from ..errors import NotFound
    from .monitoring import monitoring_changes, read_monitoring, wanted_monitoring
    from .monitoring_read import read_monitoring_if_allowed
    from .resolve import plan
    from .spec_tags import deployed_spec, tag_dict

    sm = aws.client("sagemaker")
    name = new.names["endpoint"]
    live_name = None
    try:
        current = deployed_spec(sm, name)
    except NotFound:
        live_name = _tagged_under_another_name(sm, name)
        if live_name is None:
            return ApplyPlan("create", new, monitoring=new.monitoring)
        name = live_name
        current = deployed_spec(sm, name)
    if new.spec.monitoring is None:  # asks nothing of it: a denied read leaves it be
        live_mon = read_monitoring_if_allowed(aws, name)[0]
    else:
        live_mon = read_monitoring(aws, name)
    want = wanted_monitoring(new, live_mon)
    mon = [Change(p, a, b) for p, a, b in monitoring_changes(live_mon, want)]
    arn = sm.describe_endpoint(EndpointName=name)["EndpointArn"]
    live_tags = tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))
    if live_tags.get("peagle:spec-sha256") != new.spec_sha256:
        old = plan(current)
        if not same_meaning(old, new):
            return ApplyPlan(
                "update",
                new,
                spec_changes=diff(
                    current.model_dump(mode="json", exclude=_NOT_DEPLOYED),
                    new.spec.model_dump(mode="json", exclude=_NOT_DEPLOYED),
                )
                + mon,
                request_changes=diff(request_view(old), request_view(new)),
                live_name=live_name,
                monitoring=want,
                new_config=True,
            )
        # Another spec that sends the same requests (`k: 3` where the deployed spec
        # leaves K to its default 3): the deployed spec stands, tags and all.
        new = old
    # Same spec; the endpoint's own tags must match it too (they are part of it).
    lagging = [
        Change(f"endpoint.tags.{k}", live_tags.get(k), v)
        for k, v in new.spec.tags.items()
        if live_tags.get(k) != v
    ]
    if lagging:
        return ApplyPlan(
            "update", new, spec_changes=lagging + mon, live_name=live_name, monitoring=want
        )
    if mon:
        return ApplyPlan(
            "update",
            new,
            spec_changes=mon,
            live_name=live_name,
            monitoring=want,
            monitoring_only=True,
        )
    return ApplyPlan("noop", new, live_name=live_name, monitoring=want)


def _tagged_under_another_name(sm: Any, deployment: str) -> str | None:
    """The one live endpoint tagged as `deployment` under another name, or None."""
    from ..errors import Call, SpecError, text
    from .resources import endpoints_of_deployment

    found = endpoints_of_deployment(sm, deployment)
    if len(found) > 1:
        raise SpecError(
            f"{len(found)} endpoints carry deployment {deployment}'s tags: {', '.join(found)}",
            remedy=text(
                "delete the extra ones (`{delete}`), or give each spec its own endpoint.name",
                delete=Call("delete", "NAME"),
            ),
        )
    return found[0] if found else None
