"""What `update` returns (`UpdateResult`), moved out of `ops/changes.py` (at its size limit)
and re-exported there unchanged for users."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..planning.plan_result import Plan

__all__ = ["UpdateResult"]


@dataclass(frozen=True)
class UpdateResult:
    """What `update` did; `to_dict()` is the `peagle update --json` document.

    Attributes:
        kind: "endpoint" (K, mode or instances of a one-model endpoint), "component" (K or
            mode of one inference component), "copies" (an inference component's copy
            count) or "expiry" (`ttl=`: its schedules and `peagle:expires` tag only).
        endpoint: The endpoint's name.
        status: Its EndpointStatus after the update; None for a dry run (nothing was asked
            of the endpoint).
        changes: What changes, "K 5 -> 3", ... (empty: nothing to change).
        created: The resources created, (kind, name) pairs in order.
        endpoint_config: The endpoint config it now runs (kind "endpoint"), else None.
        speculative_config: vLLM's speculative config now served, or None.
        component: The inference component changed (kinds "component", "copies"), else None.
        desired_copies: The copy count asked for (kind "copies"), else None.
        current_copies: The copies running when it returned (kind "copies"), else None.
        dry_run: True when nothing was changed, only planned.
        plan: The endpoint's new plan (not part of the document), or None.
        rollout: What the update's rollout did (`RolloutReport`: strategy, steps, alarms,
            phases seen, unverified bakes, outcome), or None when it had none; `rollout`
            in the document.
        expires_at: kind "expiry": the new expiry (ISO UTC), None once removed
            (`ttl="none"`).
    """

    kind: str
    endpoint: str
    status: str | None  # None for a dry run: nothing was asked of the endpoint
    changes: list[str] = field(default_factory=list)
    created: list[tuple[str, str]] = field(default_factory=list)
    endpoint_config: str | None = None
    speculative_config: dict | None = None
    component: str | None = None
    desired_copies: int | None = None
    current_copies: int | None = None
    dry_run: bool = False
    plan: Plan | None = field(default=None, repr=False)  # the endpoint's new plan
    rollout: Any = None  # lifecycle.rollout.RolloutReport
    expires_at: str | None = None  # kind "expiry"

    @property
    def changed(self) -> bool:
        """True when the update asked SageMaker for a change: resources were created, or an
        inference component's copy count was set (`changes` names it). False for a dry run and
        when nothing was to change."""
        if self.dry_run:
            return False
        return bool(self.created) if self.kind != "copies" else bool(self.changes)

    @property
    def scaled_to_zero(self) -> bool:
        """True when an inference component's copies were set to 0 and none remain."""
        return self.desired_copies == 0 and self.current_copies == 0

    def __getitem__(self, key: str) -> Any:
        """Deprecated: `result["status"]`, as `Endpoint.update` returned before (a
        FutureWarning; read `result.status`); `result["created"]` is the created resources'
        names, as it was then."""
        import warnings

        instead = "[name for _, name in .created]" if key == "created" else f".{key}"
        warnings.warn(
            f"UpdateResult[{key!r}] is deprecated: use {instead}", FutureWarning, stacklevel=2
        )
        if key == "created":
            return [n for _, n in self.created]
        return self.to_dict()[key]

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle update --json` prints."""
        if self.kind == "copies":
            return {
                "endpoint": self.endpoint,
                "component": self.component,
                "status": self.status,
                "changed": self.changed,
                "desired_copies": self.desired_copies,
                "current_copies": self.current_copies,
                "scaled_to_zero": self.scaled_to_zero,
                **({"dry_run": True} if self.dry_run else {}),
            }
        doc: dict[str, Any] = {"endpoint": self.endpoint, "status": self.status}
        if self.dry_run:
            doc["dry_run"] = True
        if self.kind == "endpoint":
            doc["endpoint_config"] = self.endpoint_config
        doc["changed"] = self.changed
        doc["changes"] = self.changes
        if self.kind == "endpoint":
            doc["speculative_config"] = self.speculative_config
        else:
            doc["created"] = [{"kind": kind, "name": n} for kind, n in self.created]
        if self.rollout is not None:
            doc["rollout"] = self.rollout.to_dict()
        if self.kind == "expiry":
            doc["expires_at"] = self.expires_at
        return doc
