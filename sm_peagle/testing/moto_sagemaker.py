"""A moto harness that makes SageMaker endpoint lifecycles testable offline.

moto 5.2.x fakes SageMaker well enough for create/describe/delete, but three gaps make it
useless for testing a vLLM deployer, plus two conveniences the tests and the local sandbox need:

1. Its endpoint-config validation knows only ~70 old instance types, so every GPU we deploy to
   (g5, g6, g6e, g7e, p4d, p5, p6) is rejected. We swap its hard-coded list for botocore's own
   ``ProductionVariantInstanceType`` enum, so bogus names are still rejected.
2. ``UpdateEndpoint`` is not implemented (``NotImplementedError`` under ``mock_aws``, an HTTP 500
   that boto3 retries under the server). We add it to the backend and the response class.
3. Endpoints are ``InService`` the moment they are created, so polling/timeout/failure paths can
   never run. The harness drives each endpoint's status through a *schedule*: a list of statuses
   consumed one per ``DescribeEndpoint`` call, or advanced by wall-clock time.
4. ``seed_logs`` writes CloudWatch log lines where SageMaker would put container logs.
5. ``resources`` lists what is left in the SageMaker backend, for "nothing left behind" checks.

Everything is patched on moto's *classes* (not on backend instances), because moto keeps its
backends in module globals that ``mock_aws`` resets and ``ThreadedMotoServer`` shares with the
process that started it. One harness can be installed at a time; ``uninstall`` puts every
original attribute back, so moto behaves exactly as shipped afterwards.

In-process (``mock_aws``) and threaded-server (``ThreadedMotoServer``) modes both dispatch through
``SageMakerResponse.call_action`` -> backend method, so the same patches serve both, and because
the server thread lives in this process the harness reaches its backends directly. A moto server
in *another* process (the ``moto_server`` CLI, a container) cannot be reached: run the sandbox as
``ThreadedMotoServer`` in the process that installs the harness.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.logs.models import logs_backends
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import (
    FakeEndpoint,
    FakeEndpointConfig,
    SageMakerModelBackend,
    sagemaker_backends,
)
from moto.sagemaker.responses import SageMakerResponse

__all__ = [
    "DEFAULT_FAILURE_REASON",
    "SageMakerHarness",
    "SageMakerResources",
    "endpoint_log_group",
    "installed_harness",
    "valid_instance_types",
]

# Real endpoints in these states reject UpdateEndpoint; "Failed" ones accept only DeleteEndpoint.
_IN_PROGRESS = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"})
DEFAULT_FAILURE_REASON = "Failure injected by sm_peagle.testing.moto_sagemaker"

_MISSING = object()
_active: SageMakerHarness | None = None
_install_lock = threading.Lock()


@functools.cache
def valid_instance_types() -> frozenset[str]:
    """Instance types SageMaker accepts for a production variant, per the installed botocore."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


def endpoint_log_group(endpoint_name: str) -> str:
    """The CloudWatch log group SageMaker writes an endpoint's container logs to."""
    return f"/aws/sagemaker/Endpoints/{endpoint_name}"


@dataclass(frozen=True)
class SageMakerResources:
    """Names of the SageMaker resources present in one account/region of the moto backend."""

    models: tuple[str, ...]
    endpoint_configs: tuple[str, ...]
    endpoints: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.models) + len(self.endpoint_configs) + len(self.endpoints)

    @property
    def is_empty(self) -> bool:
        return self.total == 0


@dataclass
class _Timeline:
    """Where one endpoint is in its scheduled status sequence.

    Count-based (``seconds is None``): the n-th DescribeEndpoint sees ``statuses[n-1]``, the last
    status sticks. Time-based: each status lasts ``seconds``, measured from ``started``.
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
class _PendingUpdate:
    """The deployment an UpdateEndpoint started; committed or rolled back when it settles."""

    endpoint_config_name: str
    production_variants: list[dict[str, Any]]
    data_capture_config: dict[str, Any] | None


@dataclass
class _Plan:
    statuses: tuple[str, ...]
    failure_reason: str | None
    seconds: float | None


_Key = tuple[str, str, str]  # (account_id, region, endpoint_name)


@dataclass(eq=False)  # identity semantics: "is this the installed harness?"
class SageMakerHarness:
    """Patches moto's SageMaker fake and scripts endpoint status transitions.

    A new endpoint follows, in order of precedence: its ``schedule(...)``, ``creating_seconds``
    (``Creating`` for that many seconds, then ``InService``: meant for the sandbox),
    ``default_schedule`` (count-based), else moto's instant ``InService``. UpdateEndpoint
    likewise follows ``schedule_update(...)``, ``updating_seconds``, then
    ``default_update_schedule`` (``Updating`` for one describe, then ``InService``); set the
    latter to None for an instant switch. The seconds options win over the count-based
    defaults so that setting one is enough.
    """

    account_id: str = DEFAULT_ACCOUNT_ID
    region: str = "us-east-1"
    default_schedule: Sequence[str] | None = None
    creating_seconds: float | None = None
    default_update_schedule: Sequence[str] | None = ("Updating", "InService")
    updating_seconds: float | None = None
    # Injectable so time-based schedules can be tested without sleeping.
    clock: Callable[[], float] = time.monotonic

    _timelines: dict[_Key, _Timeline] = field(default_factory=dict, init=False, repr=False)
    _pending_updates: dict[_Key, _PendingUpdate] = field(
        default_factory=dict, init=False, repr=False
    )
    _create_plans: dict[str, _Plan] = field(default_factory=dict, init=False, repr=False)
    _update_plans: dict[str, _Plan] = field(default_factory=dict, init=False, repr=False)
    _known: set[_Key] = field(default_factory=set, init=False, repr=False)
    _originals: list[tuple[type, str, Any]] = field(default_factory=list, init=False, repr=False)
    # Re-entrant: the threaded server serves requests concurrently with the test thread.
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    # ------------------------------------------------------------------ install / uninstall

    @property
    def installed(self) -> bool:
        return _active is self

    def install(self) -> SageMakerHarness:
        """Patch moto. Idempotent for this harness; refuses if another harness is installed."""
        global _active
        with _install_lock:
            if _active is self:
                return self
            if _active is not None:
                raise RuntimeError("another SageMakerHarness is installed; uninstall it first")
            for cls, name, replacement in _patches():
                self._originals.append((cls, name, cls.__dict__.get(name, _MISSING)))
                setattr(cls, name, replacement)
            _active = self
        return self

    def uninstall(self) -> None:
        """Restore moto's original classes and forget all schedules. Idempotent."""
        global _active
        with _install_lock:
            if _active is not self:
                return
            for cls, name, original in reversed(self._originals):
                if original is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, original)
            self._originals.clear()
            _active = None
        with self._lock:
            self._timelines.clear()
            self._pending_updates.clear()
            self._create_plans.clear()
            self._update_plans.clear()
            self._known.clear()

    def __enter__(self) -> SageMakerHarness:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()

    # ------------------------------------------------------------------ scheduling API

    def schedule(
        self,
        endpoint_name: str,
        statuses: Sequence[str],
        *,
        failure_reason: str | None = None,
        seconds: float | None = None,
    ) -> None:
        """Script an endpoint's statuses: one per DescribeEndpoint (or per ``seconds``).

        Applies at once to an existing endpoint; otherwise to the next endpoint created with
        this name. When the last status is reached it sticks; if it is ``Failed`` (or
        ``failure_reason`` is given), FailureReason is set then.
        """
        plan = _make_plan(statuses, failure_reason, seconds)
        with self._lock:
            # Endpoints seen in any region, plus the default region for ones created before
            # install.
            keys = {key for key in self._known if key[2] == endpoint_name}
            keys.add((self.account_id, self.region, endpoint_name))
            live = [(key, ep) for key in keys if (ep := _find_endpoint(key)) is not None]
            if not live:
                self._create_plans[endpoint_name] = plan
            for key, endpoint in live:
                self._start(key, endpoint, plan)

    def schedule_update(
        self,
        endpoint_name: str,
        statuses: Sequence[str] = ("Updating", "InService"),
        *,
        failure_reason: str | None = None,
        seconds: float | None = None,
    ) -> None:
        """Script the next UpdateEndpoint of ``endpoint_name``.

        With ``failure_reason`` the update fails: when the last status is reached the endpoint
        keeps its old config and reports the reason, as real SageMaker rolls back and keeps
        serving (so the last status should normally be ``InService``).
        """
        with self._lock:
            self._update_plans[endpoint_name] = _make_plan(statuses, failure_reason, seconds)

    def status_of(self, endpoint_name: str, region: str | None = None) -> str:
        """The stored status, without consuming a scheduled step (unlike DescribeEndpoint)."""
        key = (self.account_id, region or self.region, endpoint_name)
        endpoint = _find_endpoint(key)
        if endpoint is None:
            raise KeyError(endpoint_name)
        with self._lock:
            self._advance(key, endpoint, consume=False)
        return str(endpoint.endpoint_status)

    # ------------------------------------------------------------------ logs / inventory

    def seed_logs(
        self,
        endpoint_name: str,
        lines: Iterable[str],
        stream: str = "AllTraffic/i-0123",
        *,
        region: str | None = None,
        start_ms: int | None = None,
        step_ms: int = 1,
    ) -> str:
        """Write ``lines`` as log events in the endpoint's log group; returns the group name.

        Creates the group and stream if missing. Timestamps increase by ``step_ms`` and end at
        "now" unless ``start_ms`` is given. Goes straight to moto's logs backend, which the
        in-process ``ThreadedMotoServer`` shares, so it works in both modes.
        """
        messages = list(lines)
        backend = logs_backends[self.account_id][region or self.region]
        group = endpoint_log_group(endpoint_name)
        backend.ensure_log_group(group)
        backend.ensure_log_stream(group, stream)
        if not messages:
            return group
        if start_ms is None:
            start_ms = int(time.time() * 1000) - step_ms * (len(messages) - 1)
        events = [
            {"timestamp": start_ms + i * step_ms, "message": message}
            for i, message in enumerate(messages)
        ]
        _, rejected = backend.put_log_events(group, stream, events)
        if rejected:
            # moto silently drops events >14 days old or >2 h ahead; a test would then fail far
            # from the cause, so fail here.
            raise ValueError(f"CloudWatch rejected seeded events: {rejected}")
        return group

    def resources(self, region: str | None = None) -> SageMakerResources:
        """Models, endpoint configs and endpoints currently in the backend for ``region``."""
        backend = sagemaker_backends[self.account_id][region or self.region]
        return SageMakerResources(
            models=tuple(sorted(backend._models)),
            endpoint_configs=tuple(sorted(backend.endpoint_configs)),
            endpoints=tuple(sorted(backend.endpoints)),
        )

    # ------------------------------------------------------------------ hooks (moto side)

    def _on_create(self, backend: SageMakerModelBackend, endpoint: FakeEndpoint) -> None:
        key = _key(backend, endpoint.endpoint_name)
        with self._lock:
            self._known.add(key)
            self._pending_updates.pop(key, None)
            plan = self._create_plans.pop(endpoint.endpoint_name, None)
            if plan is None and self.creating_seconds is not None:
                plan = _make_plan(("Creating", "InService"), None, self.creating_seconds)
            if plan is None and self.default_schedule is not None:
                plan = _make_plan(self.default_schedule, None, None)
            if plan is not None:
                self._start(key, endpoint, plan)

    def _on_describe(self, backend: SageMakerModelBackend, endpoint_name: str) -> None:
        endpoint = backend.endpoints.get(endpoint_name)
        if endpoint is None:
            return  # moto raises the proper "Could not find endpoint" error
        key = _key(backend, endpoint_name)
        with self._lock:
            self._known.add(key)
            self._advance(key, endpoint, consume=True)

    def _on_list(self, backend: SageMakerModelBackend) -> None:
        # Only time-based timelines move here: a listing must not consume describe steps.
        with self._lock:
            for name, endpoint in list(backend.endpoints.items()):
                self._advance(_key(backend, name), endpoint, consume=False)

    def _on_delete(self, backend: SageMakerModelBackend, endpoint_name: str) -> None:
        key = _key(backend, endpoint_name)
        with self._lock:
            self._timelines.pop(key, None)
            self._pending_updates.pop(key, None)
            self._known.discard(key)

    def _update_endpoint(
        self, backend: SageMakerModelBackend, endpoint_name: str, endpoint_config_name: str
    ) -> str:
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

        key = _key(backend, endpoint_name)
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
            pending = _PendingUpdate(
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
                "StartTime": utcnow(),
            }
            endpoint.last_modified_time = utcnow()

            plan = self._update_plans.pop(endpoint_name, None)
            if plan is None and self.updating_seconds is not None:
                plan = _make_plan(("Updating", "InService"), None, self.updating_seconds)
            if plan is None and self.default_update_schedule is not None:
                plan = _make_plan(self.default_update_schedule, None, None)
            if plan is None:
                plan = _make_plan(("InService",), None, None)
            self._start(key, endpoint, plan)
        return str(endpoint.arn)

    # ------------------------------------------------------------------ timeline mechanics

    def _start(self, key: _Key, endpoint: FakeEndpoint, plan: _Plan) -> None:
        timeline = _Timeline(plan.statuses, plan.failure_reason, plan.seconds, self.clock())
        self._timelines[key] = timeline
        endpoint.endpoint_status = plan.statuses[0]
        endpoint.failure_reason = None
        if len(plan.statuses) == 1:
            self._settle(key, endpoint, timeline)

    def _advance(self, key: _Key, endpoint: FakeEndpoint, *, consume: bool) -> None:
        timeline = self._timelines.get(key)
        if timeline is None:
            return
        if not consume and timeline.seconds is None:
            return  # count-based: the stored status is already what the last describe saw
        index = timeline.index(self.clock(), consume=consume)
        if endpoint.endpoint_status != timeline.statuses[index]:
            endpoint.last_modified_time = utcnow()
        endpoint.endpoint_status = timeline.statuses[index]
        if index == len(timeline.statuses) - 1:
            self._settle(key, endpoint, timeline)

    def _settle(self, key: _Key, endpoint: FakeEndpoint, timeline: _Timeline) -> None:
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


# ---------------------------------------------------------------------- helpers


def _make_plan(statuses: Sequence[str], failure_reason: str | None, seconds: float | None) -> _Plan:
    if isinstance(statuses, str) or not statuses:
        raise ValueError("statuses must be a non-empty sequence of status names")
    if seconds is not None and seconds <= 0:
        raise ValueError("seconds must be positive")
    return _Plan(tuple(statuses), failure_reason, seconds)


def _key(backend: SageMakerModelBackend, endpoint_name: str) -> _Key:
    return (backend.account_id, backend.region_name, endpoint_name)


def _find_endpoint(key: _Key) -> FakeEndpoint | None:
    account_id, region, name = key
    endpoint: FakeEndpoint | None = sagemaker_backends[account_id][region].endpoints.get(name)
    return endpoint


def _harness() -> SageMakerHarness:
    # Patched methods exist only while a harness is installed, but a request racing with
    # uninstall could still land here; failing loudly beats silently skipping the hook.
    if _active is None:
        raise RuntimeError("sm_peagle moto harness is not installed")
    return _active


# ---------------------------------------------------------------------- the patches


def _patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""
    original_create = SageMakerModelBackend.create_endpoint
    original_describe = SageMakerModelBackend.describe_endpoint
    original_delete = SageMakerModelBackend.delete_endpoint
    original_list = SageMakerModelBackend.list_endpoints

    def validate_instance_type(self: FakeEndpointConfig, instance_type: str) -> None:
        allowed = valid_instance_types()
        if instance_type not in allowed:
            # Same wording as moto's (and AWS's) enum error, with the up-to-date value set.
            raise ValidationError(
                message=f"Value '{instance_type}' at 'instanceType' failed to satisfy "
                f"constraint: Member must satisfy enum value set: {sorted(allowed)}"
            )

    original_validate_variants = FakeEndpointConfig.validate_production_variants

    def validate_production_variants(
        self: FakeEndpointConfig, production_variants: list[dict[str, Any]]
    ) -> None:
        # moto only knows InstanceType / ServerlessConfig variants; AWS also takes
        # InstancePools (capacity fallbacks, 1-5 pools, distinct priorities).
        plain = []
        for variant in production_variants:
            pools = variant.get("InstancePools")
            if pools and "InstanceType" not in variant:
                if not 1 <= len(pools) <= 5:
                    raise ValidationError(message="InstancePools must hold 1 to 5 pools")
                if len({p["Priority"] for p in pools}) != len(pools):
                    raise ValidationError(message="InstancePools priorities must be distinct")
                for pool in pools:
                    validate_instance_type(self, pool["InstanceType"])
            else:
                plain.append(variant)
        original_validate_variants(self, plain)

    def create_endpoint(
        self: SageMakerModelBackend,
        endpoint_name: str,
        endpoint_config_name: str,
        tags: list[dict[str, str]],
    ) -> FakeEndpoint:
        if endpoint_name in self.endpoints:
            # moto silently overwrites; AWS refuses, and deployers must handle that.
            arn = FakeEndpoint.arn_formatter(endpoint_name, self.account_id, self.region_name)
            raise ValidationError(message=f'Cannot create already existing endpoint "{arn}".')
        endpoint = original_create(self, endpoint_name, endpoint_config_name, tags)
        _harness()._on_create(self, endpoint)
        return endpoint

    def describe_endpoint(self: SageMakerModelBackend, endpoint_name: str) -> dict[str, Any]:
        _harness()._on_describe(self, endpoint_name)
        return original_describe(self, endpoint_name)

    def delete_endpoint(self: SageMakerModelBackend, endpoint_name: str) -> None:
        original_delete(self, endpoint_name)
        _harness()._on_delete(self, endpoint_name)

    def list_endpoints(self: SageMakerModelBackend, *args: Any, **kwargs: Any) -> Any:
        _harness()._on_list(self)
        return original_list(self, *args, **kwargs)

    def update_endpoint(
        self: SageMakerModelBackend,
        endpoint_name: str,
        endpoint_config_name: str,
        **_ignored: Any,
    ) -> str:
        return _harness()._update_endpoint(self, endpoint_name, endpoint_config_name)

    def response_update_endpoint(self: SageMakerResponse) -> ActionResult:
        # RetainAllVariantProperties, DeploymentConfig etc. parse fine and are ignored: the
        # fake has no variant properties or blue/green deployment to honour them with.
        arn = self.sagemaker_backend.update_endpoint(
            endpoint_name=self._get_param("EndpointName"),
            endpoint_config_name=self._get_param("EndpointConfigName"),
        )
        return ActionResult({"EndpointArn": arn})

    return [
        (FakeEndpointConfig, "validate_instance_type", validate_instance_type),
        (FakeEndpointConfig, "validate_production_variants", validate_production_variants),
        (SageMakerModelBackend, "create_endpoint", create_endpoint),
        (SageMakerModelBackend, "describe_endpoint", describe_endpoint),
        (SageMakerModelBackend, "delete_endpoint", delete_endpoint),
        (SageMakerModelBackend, "list_endpoints", list_endpoints),
        (SageMakerModelBackend, "update_endpoint", update_endpoint),
        # BaseResponse.call_action routes "UpdateEndpoint" to the method named
        # camelcase_to_underscores(action), found via inspect on the class at each request.
        (SageMakerResponse, "update_endpoint", response_update_endpoint),
    ]


@contextmanager
def installed_harness(**options: Any) -> Iterator[SageMakerHarness]:
    """``with installed_harness(default_schedule=[...]) as harness:`` convenience wrapper."""
    harness = SageMakerHarness(**options)
    with harness:
        yield harness
