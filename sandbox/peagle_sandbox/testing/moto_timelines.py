"""Endpoint status schedules for the moto harness: the state behind `SageMakerHarness`.

moto makes an endpoint InService the moment it is created and has no UpdateEndpoint.
`EndpointTimelines` holds each endpoint's scripted statuses (count- or time-based) and
the hooks the patched backend methods call (`moto_endpoint_patches`): on create,
describe, list, delete, and UpdateEndpoint's pending deployment and its outcome.

Deletion is instant (moto's) unless `deleting_seconds` is set: then DeleteEndpoint leaves
the endpoint `Deleting` (described and listed, not serving) for that many seconds of the
sandbox clock, and the first call that looks at its region after that finds it gone.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import (
    FakeEndpoint,
    FakeEndpointConfig,
    SageMakerModelBackend,
    sagemaker_backends,
)

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing import moto_rollouts
from peagle_sandbox.testing.moto_rollouts import Rollout, RolloutState

__all__ = [
    "DEFAULT_FAILURE_REASON",
    "EndpointTimelines",
    "find_endpoint",
    "make_plan",
    "status_began",
]

# Real endpoints in these states reject UpdateEndpoint; "Failed" ones accept only DeleteEndpoint.
_IN_PROGRESS = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"})
DEFAULT_FAILURE_REASON = "Failure injected by peagle_sandbox.testing.moto_sagemaker"


@dataclass
class Timeline:
    """Where one endpoint is in its scheduled status sequence.

    Count-based (``seconds is None``): the n-th DescribeEndpoint sees ``statuses[n-1]``, the last
    status sticks. Time-based: each status lasts ``seconds`` of sandbox time, measured from
    ``started`` (sandbox epoch seconds).
    """

    statuses: tuple[str, ...]
    failure_reason: str | None
    seconds: float | None
    started: float
    describes: int = 0

    def index(self, now: float, *, consume: bool) -> int:
        last = len(self.statuses) - 1
        if self.seconds is not None:
            return min(int((now - self.started) / self.seconds), last)
        if not consume:  # peeking (e.g. ListEndpoints) must not eat a scheduled describe
            return min(max(self.describes - 1, 0), last)
        self.describes += 1
        return min(self.describes - 1, last)


@dataclass
class PendingUpdate:
    """The deployment an UpdateEndpoint started; committed or rolled back when it settles."""

    endpoint_config_name: str
    production_variants: list[dict[str, Any]]
    data_capture_config: dict[str, Any] | None


@dataclass
class StatusPlan:
    statuses: tuple[str, ...]
    failure_reason: str | None
    seconds: float | None


Key = tuple[str, str, str]  # (account_id, region, endpoint_name)


def make_plan(
    statuses: Sequence[str], failure_reason: str | None, seconds: float | None
) -> StatusPlan:
    if isinstance(statuses, str) or not statuses:
        raise ValueError("statuses must be a non-empty sequence of status names")
    if seconds is not None and seconds <= 0:
        raise ValueError("seconds must be positive")
    return StatusPlan(tuple(statuses), failure_reason, seconds)


def key_of(backend: SageMakerModelBackend, endpoint_name: str) -> Key:
    return (backend.account_id, backend.region_name, endpoint_name)


def find_endpoint(key: Key) -> FakeEndpoint | None:
    account_id, region, name = key
    endpoint: FakeEndpoint | None = sagemaker_backends[account_id][region].endpoints.get(name)
    return endpoint


@dataclass(eq=False)
class EndpointTimelines:
    """Scripted endpoint statuses and the moto-side hooks; see SageMakerHarness."""

    account_id: str = DEFAULT_ACCOUNT_ID
    region: str = "us-east-1"
    default_schedule: Sequence[str] | None = None
    creating_seconds: float | None = None
    default_update_schedule: Sequence[str] | None = ("Updating", "InService")
    updating_seconds: float | None = None
    # Seconds of the clock an endpoint stays Deleting after DeleteEndpoint (None: gone at once).
    deleting_seconds: float | None = None
    # The sandbox clock: time-based schedules and every timestamp moto writes (the
    # harness patches moto's utcnow to it). Tests freeze and advance it instead of sleeping.
    clock: SandboxClock = field(default_factory=SandboxClock)
    # Guardrail deployments (UpdateEndpoint with a DeploymentConfig; moto_rollouts): how
    # long the new fleet provisions (None: `updating_seconds` or 0), how long a rollback
    # stays Updating, the FailureReason it leaves (None: empty, terraform PR #49020's case),
    # and callables (region, name, outcome, old_config, new_config) told when one settles.
    provisioning_seconds: float | None = None
    rollback_seconds: float = 0.0
    rollback_failure_reason: str | None = None
    rollout_listeners: list[Any] = field(default_factory=list)

    _timelines: dict[Key, Timeline] = field(default_factory=dict, init=False, repr=False)
    _pending_updates: dict[Key, PendingUpdate] = field(default_factory=dict, init=False, repr=False)
    _create_plans: dict[str, StatusPlan] = field(default_factory=dict, init=False, repr=False)
    _update_plans: dict[str, StatusPlan] = field(default_factory=dict, init=False, repr=False)
    _known: set[Key] = field(default_factory=set, init=False, repr=False)
    _deleting: dict[Key, float] = field(default_factory=dict, init=False, repr=False)  # -> due
    _rollouts: dict[Key, Rollout] = field(default_factory=dict, init=False, repr=False)
    # Re-entrant: the threaded server serves requests concurrently with the test thread.
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    # ------------------------------------------------------------------ hooks (moto side)

    def _on_create(self, backend: SageMakerModelBackend, endpoint: FakeEndpoint) -> None:
        key = key_of(backend, endpoint.endpoint_name)
        with self._lock:
            self._known.add(key)
            self._pending_updates.pop(key, None)
            plan = self._create_plans.pop(endpoint.endpoint_name, None)
            if plan is None and self.creating_seconds is not None:
                plan = make_plan(("Creating", "InService"), None, self.creating_seconds)
            if plan is None and self.default_schedule is not None:
                plan = make_plan(self.default_schedule, None, None)
            if plan is not None:
                self._start(key, endpoint, plan)

    def _on_describe(self, backend: SageMakerModelBackend, endpoint_name: str) -> None:
        self._reap(backend)
        self._sync_rollouts()
        endpoint = backend.endpoints.get(endpoint_name)
        if endpoint is None:
            return  # moto raises the proper "Could not find endpoint" error
        key = key_of(backend, endpoint_name)
        with self._lock:
            self._known.add(key)
            self._advance(key, endpoint, consume=True)

    def _on_list(self, backend: SageMakerModelBackend) -> None:
        # Only time-based timelines move here: a listing must not consume describe steps.
        self._reap(backend)
        self._sync_rollouts()
        with self._lock:
            for name, endpoint in list(backend.endpoints.items()):
                self._advance(key_of(backend, name), endpoint, consume=False)

    def _on_delete(self, backend: SageMakerModelBackend, endpoint_name: str) -> None:
        key = key_of(backend, endpoint_name)
        with self._lock:
            self._timelines.pop(key, None)
            self._pending_updates.pop(key, None)
            self._rollouts.pop(key, None)
            self._known.discard(key)

    def _begin_delete(self, backend: SageMakerModelBackend, endpoint: FakeEndpoint) -> bool:
        """DeleteEndpoint with `deleting_seconds`: the endpoint is `Deleting` until they
        have passed on the clock (True); without: False, the caller deletes it at once. A
        second DeleteEndpoint while it is Deleting changes nothing."""
        if not self.deleting_seconds:
            return False
        key = key_of(backend, endpoint.endpoint_name)
        with self._lock:
            if key not in self._deleting:
                # Nothing scheduled may move it again (e.g. an update settling to InService).
                self._timelines.pop(key, None)
                self._pending_updates.pop(key, None)
                self._rollouts.pop(key, None)
                endpoint.endpoint_status = "Deleting"
                endpoint.failure_reason = None
                endpoint.last_modified_time = self.clock.naive_utcnow()
                self._deleting[key] = self.clock.now() + self.deleting_seconds
        return True

    def _reap(self, backend: SageMakerModelBackend) -> None:
        """Remove the endpoints of `backend` whose Deleting time has passed. Called before
        the hooks take the lock: `_on_delete` may wait for a real engine to stop."""
        if not self._deleting:
            return
        now = self.clock.now()
        gone = []
        with self._lock:
            for key, due in list(self._deleting.items()):
                if key[:2] == (backend.account_id, backend.region_name) and due <= now:
                    del self._deleting[key]
                    if backend.endpoints.pop(key[2], None) is not None:
                        gone.append(key[2])
        for name in gone:
            self._on_delete(backend, name)

    def _update_endpoint(
        self,
        backend: SageMakerModelBackend,
        endpoint_name: str,
        endpoint_config_name: str,
        deployment: dict[str, Any] | None = None,
    ) -> str:
        """UpdateEndpoint. `deployment`: its DeploymentConfig, RetainAllVariantProperties and
        ExcludeRetainedVariantProperties; with a DeploymentConfig the update is a guardrail
        deployment (moto_rollouts), else the plain status plan below."""
        self._reap(backend)
        self._sync_rollouts()
        endpoint = backend.endpoints.get(endpoint_name)
        if endpoint is None:
            arn = FakeEndpoint.arn_formatter(endpoint_name, backend.account_id, backend.region_name)
            raise ValidationError(message=f"Could not find endpoint '{arn}'.")
        config = backend.endpoint_configs.get(endpoint_config_name)
        if config is None:
            arn = FakeEndpointConfig.arn_formatter(
                endpoint_config_name, backend.account_id, backend.region_name
            )
            raise ValidationError(message=f"Could not find endpoint configuration '{arn}'.")

        key = key_of(backend, endpoint_name)
        with self._lock:
            self._known.add(key)
            # Settle any time-based transition first so the status check sees "now".
            self._advance(key, endpoint, consume=False)
            status = endpoint.endpoint_status
            if status == "Failed":
                raise ValidationError(
                    message=f"Cannot update endpoint '{endpoint.arn}' in status Failed; "
                    "a failed endpoint can only be deleted."
                )
            if status in _IN_PROGRESS:
                raise ValidationError(
                    message=f"Cannot update in-progress endpoint '{endpoint.arn}'."
                )

            variants = endpoint._process_production_variants(config.production_variants)
            deployment = dict(deployment or {})
            if not deployment.get("DeploymentConfig") and deployment.get("RetainDeploymentConfig"):
                deployment["DeploymentConfig"] = getattr(endpoint, "last_deployment_config", None)
            deployment.pop("RetainDeploymentConfig", None)
            if deployment.get("DeploymentConfig"):
                plan = self._update_plans.get(endpoint_name)
                self._rollouts[key] = moto_rollouts.start_endpoint_rollout(
                    self, key, endpoint, config, variants, deployment,
                    plan.failure_reason if plan is not None else None,
                )  # fmt: skip
                self._update_plans.pop(endpoint_name, None)
                self._timelines.pop(key, None)
                return str(endpoint.arn)
            if deployment.get("RetainAllVariantProperties"):
                variants = moto_rollouts.retained_variants(endpoint, variants, deployment)
            pending = PendingUpdate(
                endpoint_config_name=endpoint_config_name,
                production_variants=variants,
                data_capture_config=config.data_capture_config,
            )
            self._pending_updates[key] = pending
            # DescribeEndpoint reports the in-flight deployment here, while EndpointConfigName
            # still names the config being served, as real SageMaker does.
            endpoint.pending_deployment_summary = {
                "EndpointConfigName": endpoint_config_name,
                "ProductionVariants": [
                    {**variant, "InstanceType": source.get("InstanceType")}
                    if source.get("InstanceType")
                    else dict(variant)
                    for variant, source in zip(variants, config.production_variants, strict=True)
                ],
                "StartTime": self.clock.naive_utcnow(),
            }
            endpoint.last_modified_time = self.clock.naive_utcnow()

            plan = self._update_plans.pop(endpoint_name, None)
            if plan is None and self.updating_seconds is not None:
                plan = make_plan(("Updating", "InService"), None, self.updating_seconds)
            if plan is None and self.default_update_schedule is not None:
                plan = make_plan(self.default_update_schedule, None, None)
            if plan is None:
                plan = make_plan(("InService",), None, None)
            self._start(key, endpoint, plan)
        return str(endpoint.arn)

    # ------------------------------------------------------------------ guardrail rollouts

    def _rollout_held(self) -> bool:
        """Whether a new fleet provisions until `fleet_ready` (the real-engine sandbox)."""
        return False

    def evaluate_alarms(self, now: float | None = None) -> int:
        """Walk the rollouts (the harness also evaluates CloudWatch alarms first)."""
        self._walk_rollouts(now)
        return 0

    def _sync_rollouts(self) -> None:
        """Before a read: bring the rollouts up to the clock. Alarms are evaluated first
        unless the owner evaluates them in its own tick (the sandbox server)."""
        if not self._rollouts:
            return
        if getattr(self, "evaluate_on_advance", True):
            self.evaluate_alarms()
        else:
            self._walk_rollouts()

    def _walk_rollouts(self, now: float | None = None) -> None:
        """Commit or roll back what is due by `now` (default: the clock's), in time order
        per endpoint; then tell the listeners, outside the lock."""
        if not self._rollouts:
            return
        at = self.clock.now() if now is None else now
        outcomes = []
        with self._lock:
            for key, rollout in list(self._rollouts.items()):
                endpoint = find_endpoint(key)
                if endpoint is None:
                    self._rollouts.pop(key, None)
                    continue
                outcome = moto_rollouts.walk_endpoint(self, rollout, endpoint, at)
                if outcome is not None:
                    self._rollouts.pop(key, None)
                    outcomes.append(outcome)
        moto_rollouts.fire(self.rollout_listeners, outcomes)

    def rollout_of(self, name: str, region: str | None = None) -> RolloutState | None:
        """The guardrail deployment of endpoint `name` in progress now, or None."""
        self._sync_rollouts()
        key = (self.account_id, region or self.region, name)
        with self._lock:
            rollout = self._rollouts.get(key)
            return None if rollout is None else rollout.state(self.clock.now(), key[1])

    def fleet_ready(self, region: str, name: str) -> bool:
        """The new fleet of `name`'s guardrail deployment is up (the engine sandbox calls it
        on the new engine's /ping): provisioning ends now. False if none is waiting."""
        key = (self.account_id, region, name)
        with self._lock:
            rollout = self._rollouts.get(key)
            if rollout is None or rollout.rollback_at is not None:
                return False
            if rollout.ready_at is None:
                rollout.ready_at = self.clock.now()
        self._sync_rollouts()
        return True

    def _fail_rollout(self, key: Key, reason: str | None) -> bool:
        """The new fleet failed: roll back now with `reason` as FailureReason."""
        with self._lock:
            rollout = self._rollouts.get(key)
            if rollout is None:
                return False
            if rollout.rollback_at is None:
                now = self.clock.now()
                rollout.rollback_at = now
                rollout.rollback_until = now + float(self.rollback_seconds or 0.0)
                rollout.rollback_reason = reason
        self._walk_rollouts()
        return True

    # ------------------------------------------------------------------ timeline mechanics

    def _start(self, key: Key, endpoint: FakeEndpoint, plan: StatusPlan) -> None:
        timeline = Timeline(plan.statuses, plan.failure_reason, plan.seconds, self.clock.now())
        self._timelines[key] = timeline
        endpoint.endpoint_status = plan.statuses[0]
        endpoint.failure_reason = None
        if len(plan.statuses) == 1:
            self._settle(key, endpoint, timeline)

    def _advance(self, key: Key, endpoint: FakeEndpoint, *, consume: bool) -> None:
        timeline = self._timelines.get(key)
        if timeline is None:
            return
        if not consume and timeline.seconds is None:
            return  # count-based: the stored status is already what the last describe saw
        now = self.clock.now()
        index = timeline.index(now, consume=consume)
        if endpoint.endpoint_status != timeline.statuses[index]:
            began = status_began(timeline.started, timeline.seconds, index, now)
            endpoint.last_modified_time = began
        endpoint.endpoint_status = timeline.statuses[index]
        if index == len(timeline.statuses) - 1:
            self._settle(key, endpoint, timeline)

    def _settle(self, key: Key, endpoint: FakeEndpoint, timeline: Timeline) -> None:
        """Apply the outcome of a finished timeline and stop tracking it."""
        self._timelines.pop(key, None)
        final = timeline.statuses[-1]
        failed = timeline.failure_reason is not None or final == "Failed"
        pending = self._pending_updates.pop(key, None)
        if pending is not None:
            endpoint.pending_deployment_summary = None
            if not failed:
                endpoint.endpoint_config_name = pending.endpoint_config_name
                endpoint.production_variants = pending.production_variants
                endpoint.data_capture_config = pending.data_capture_config
        endpoint.failure_reason = (
            (timeline.failure_reason or DEFAULT_FAILURE_REASON) if failed else None
        )


def status_began(started: float, seconds: float | None, index: int, now: float) -> datetime:
    """When status ``index`` of a timeline started at ``started`` began, as moto keeps
    times (naive UTC): on its schedule for a time-based one (``seconds`` per status: a
    status seen late began on time, as AWS's LastModifiedTime says), else ``now``.
    Endpoints and inference components both stamp LastModifiedTime with it."""
    epoch = now if seconds is None else min(started + index * seconds, now)
    return datetime.fromtimestamp(epoch, tz=UTC).replace(tzinfo=None)
