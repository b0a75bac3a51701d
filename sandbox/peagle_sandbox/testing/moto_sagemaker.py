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
   consumed one per ``DescribeEndpoint`` call, or advanced by the sandbox clock (``clock``, a
   ``peagle_sandbox.sandbox_clock.SandboxClock``: real time by default, or frozen and
   advanced by a test).
4. ``seed_logs`` writes CloudWatch log lines where SageMaker would put container logs.
5. ``resources`` lists what is left in the SageMaker backend, for "nothing left behind" checks.
6. ``requests`` records every AWS request moto receives (service, operation, parameters, time).
7. Every time moto writes (CreationTime, LastModifiedTime, log ingestion, datapoints, the HTTP
   ``Date`` header) is the harness's clock (``moto_clock``).
8. CloudWatch Logs transformers and metric filters computed on ingestion, dashboard tags
   (``moto_monitoring``), and metric alarms evaluated on the clock with their history
   (``moto_alarms``; ``evaluate_alarms``).
9. EventBridge Scheduler requests checked as AWS checks them, and one-time schedules run on
   the clock behind the role checks (``moto_scheduler``, ``moto_iam_eval``;
   ``run_schedules``, ``schedule_runs``); Application Auto Scaling's scaling activities
   (``moto_scaling``; ``record_scaling``).

Everything is patched on moto's *classes* (not on backend instances), because moto keeps its
backends in module globals that ``mock_aws`` resets and ``ThreadedMotoServer`` shares with the
process that started it. One harness can be installed at a time; ``uninstall`` puts every
original attribute back, so moto behaves exactly as shipped afterwards.

In-process (``mock_aws``) and threaded-server (``ThreadedMotoServer``) modes both dispatch through
``SageMakerResponse.call_action`` -> backend method, so the same patches serve both, and because
the server thread lives in this process the harness reaches its backends directly. A moto server
in *another* process (the ``moto_server`` CLI, a container) cannot be reached: run the sandbox as
``ThreadedMotoServer`` in the process that installs the harness.

One module per patched area: ``moto_config_patches`` (instance types, InstancePools),
``moto_model_patches`` (CreateModel's EnableNetworkIsolation),
``moto_shape_patches`` (empty VpcConfig / DataCaptureConfig left out, as AWS does),
``moto_endpoint_patches`` (create / describe / list / delete / UpdateEndpoint),
``moto_components`` (inference components, scale to zero, the autoscaling dimension), with the
status schedules they drive in ``moto_timelines``; ``moto_rollouts`` / ``moto_rollout_rules``
(UpdateEndpoint's and UpdateInferenceComponent's DeploymentConfig: deployment guardrails on
the clock) and ``moto_sagemaker_metrics`` (SageMaker's AWS/SageMaker invocation metrics).
This module installs them and holds the harness's public API (schedules, logs, inventory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from moto.logs.models import logs_backends
from moto.sagemaker.models import sagemaker_backends

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_alarms import AlarmEvaluator, alarm_patches
from peagle_sandbox.testing.moto_clock import clock_patches
from peagle_sandbox.testing.moto_components import component_patches
from peagle_sandbox.testing.moto_config_patches import config_patches, valid_instance_types
from peagle_sandbox.testing.moto_endpoint_patches import endpoint_patches
from peagle_sandbox.testing.moto_model_patches import model_patches
from peagle_sandbox.testing.moto_monitoring import monitoring_patches
from peagle_sandbox.testing.moto_sagemaker_metrics import metrics_patches, record_invocation
from peagle_sandbox.testing.moto_scaling import ScalingActivities, scaling_patches
from peagle_sandbox.testing.moto_scheduler import ScheduleRunner, scheduler_patches
from peagle_sandbox.testing.moto_shape_patches import shape_patches
from peagle_sandbox.testing.moto_timelines import (
    DEFAULT_FAILURE_REASON,
    EndpointTimelines,
    find_endpoint,
    make_plan,
)
from peagle_sandbox.testing.moto_training import TrainingJobs, training_patches
from peagle_sandbox.testing.request_log import (
    RecordedRequest,
    RequestLog,
    request_log_patches,
)

__all__ = [
    "DEFAULT_FAILURE_REASON",
    "SageMakerHarness",
    "SageMakerResources",
    "component_log_group",
    "endpoint_log_group",
    "installed_harness",
    "valid_instance_types",
]

_MISSING = object()
_active: SageMakerHarness | None = None
_install_lock = threading.Lock()


def endpoint_log_group(endpoint_name: str) -> str:
    """The CloudWatch log group SageMaker writes an endpoint's container logs to."""
    return f"/aws/sagemaker/Endpoints/{endpoint_name}"


def component_log_group(component: str) -> str:
    """The CloudWatch log group of an inference component's container logs.

    No AWS documentation page in reach lists it (the "Log groups and streams that SageMaker
    sends to CloudWatch Logs" table names only /aws/sagemaker/Endpoints/...); this is the
    group public code reads inference-component container logs from (LLM benchmark scripts
    that pick `/aws/sagemaker/InferenceComponents/{name}` over the endpoint's group, and a
    Terraform import of a real account's log groups). Treat it as well attested, not as
    documented."""
    return f"/aws/sagemaker/InferenceComponents/{component}"


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


@dataclass(eq=False)  # identity semantics: "is this the installed harness?"
class SageMakerHarness(EndpointTimelines):
    """Patches moto's SageMaker fake and scripts endpoint status transitions.

    A new endpoint follows, in order of precedence: its ``schedule(...)``, ``creating_seconds``
    (``Creating`` for that many seconds of the ``clock``, then ``InService``: meant for the
    sandbox),
    ``default_schedule`` (count-based), else moto's instant ``InService``. UpdateEndpoint
    likewise follows ``schedule_update(...)``, ``updating_seconds``, then
    ``default_update_schedule`` (``Updating`` for one describe, then ``InService``); set the
    latter to None for an instant switch. The seconds options win over the count-based
    defaults so that setting one is enough.
    """

    _originals: list[tuple[type, str, Any]] = field(default_factory=list, init=False, repr=False)
    # Every AWS request moto receives while this harness is installed (request_log.py).
    requests: RequestLog = field(default_factory=RequestLog, init=False, repr=False)
    # Metric alarms' evaluation progress and history (moto_alarms.py).
    alarms: AlarmEvaluator = field(default_factory=AlarmEvaluator, init=False, repr=False)
    # Application Auto Scaling's scaling activities (moto_scaling.py; record_scaling).
    scaling: ScalingActivities = field(default_factory=ScalingActivities, init=False, repr=False)
    # EventBridge Scheduler's one-time schedules run on the clock (moto_scheduler.py).
    schedules: ScheduleRunner = field(default_factory=ScheduleRunner, init=False, repr=False)
    # Training jobs on the clock, and who trains them (moto_training.py).
    training: TrainingJobs = field(default_factory=TrainingJobs, init=False, repr=False)
    # Run due schedules and evaluate alarms whenever the clock is advanced or resumed. The
    # sandbox server turns this off and does both in its own tick, after the log simulator
    # has written what became due (so a line is ingested before its period is judged).
    evaluate_on_advance: bool = True
    _watched: SandboxClock | None = field(default=None, init=False, repr=False)

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
        self._watch_clock()
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
            self._deleting.clear()
            self._rollouts.clear()
        self.alarms.clear()
        self.scaling.clear()
        self.schedules.clear()
        self.training.clear()

    def __enter__(self) -> SageMakerHarness:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()

    # ------------------------------------------------------------------ alarms

    def evaluate_alarms(self, now: float | None = None) -> int:
        """Evaluate every CloudWatch metric alarm at each period boundary passed up to
        `now` (default: the clock's now); returns how many changed state. DescribeAlarms
        and DescribeAlarmHistory run it first, so in-process tests need no ticker."""
        self._watch_clock()
        changes = self.alarms.evaluate(self.clock.now() if now is None else now)
        self._walk_rollouts(now)  # guardrail deployments read the history just written
        return changes

    def record_invocation(
        self,
        region: str,
        endpoint: str,
        variant: str,
        config: str,
        *,
        latency_us: float,
        status_code: int,
        component: str | None = None,
        at: float | None = None,
    ) -> None:
        """SageMaker's AWS/SageMaker metrics for one invocation served by `config` (its
        fleet): Invocations, ModelLatency (µs), Invocation4XX/5XXErrors, at `at` (default
        the clock's now); see moto_sagemaker_metrics."""
        record_invocation(
            self.account_id, self.clock.now(), region, endpoint, variant, config,
            latency_us=latency_us, status_code=status_code, component=component, at=at,
        )  # fmt: skip

    def run_schedules(self, now: float | None = None) -> int:
        """Run every EventBridge Scheduler schedule due by `now` (default: the clock's now):
        the role checks, then the target call; returns the attempts made. Run on every
        clock advance in process, and by the sandbox server's tick."""
        self._watch_clock()

        def record(service: str, operation: str, params: dict[str, Any]) -> None:
            # The scheduled call reaches SageMaker as a request of its own (made by the role).
            self.requests.record(RecordedRequest(service, operation, params, time.time()))

        return self.schedules.run(self.clock.now() if now is None else now, record)

    def run_training(self, now: float | None = None) -> None:
        """Walk every training job to `now` (default: the clock's now): phases, logs,
        output. Describe/List/Stop walk first; the clock's advance and the server's tick
        walk too, so logs and outputs appear with no call."""
        self.training.walk(self.clock.now() if now is None else now)

    @property
    def training_jobs(self) -> list[dict[str, Any]]:
        """Every training job's status, trainer and log stream (moto_training)."""
        return [job.summary() for job in self.training.jobs()]

    @property
    def schedule_runs(self) -> list[dict[str, Any]]:
        """Every scheduled attempt, oldest first (moto_scheduler.ScheduleRunner.runs)."""
        return self.schedules.runs

    def record_scaling(
        self,
        endpoint: str,
        variant: str,
        desired: int,
        at: float | None = None,
        *,
        region: str | None = None,
        status: str = "Successful",
    ) -> dict[str, Any]:
        """A DescribeScalingActivities activity setting `variant`'s desired instance count to
        `desired`, at `at` (default: the clock's now); a Successful one also sets the
        endpoint's instance counts (moto_scaling)."""
        when = self.clock.now() if at is None else at
        return self.scaling.record(
            self.account_id, region or self.region, endpoint, variant, desired, when,
            status=status,
        )  # fmt: skip

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "clock" and self.installed:  # a test swapped the clock after install
            self._watch_clock()

    def _watch_clock(self) -> None:
        # Follow whichever clock is current (tests swap it after install).
        clock = self.clock
        if self._watched is clock or not hasattr(clock, "on_advance"):
            return
        self._watched = clock

        def moved() -> None:
            if self.installed and self.clock is clock and self.evaluate_on_advance:
                self.run_schedules()  # a deletion lands before alarms judge the minute
                self.run_training()
                self.evaluate_alarms()

        clock.on_advance(moved)

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
        plan = make_plan(statuses, failure_reason, seconds)
        with self._lock:
            # Endpoints seen in any region, plus the default region for ones created before
            # install.
            keys = {key for key in self._known if key[2] == endpoint_name}
            keys.add((self.account_id, self.region, endpoint_name))
            live = [(key, ep) for key in keys if (ep := find_endpoint(key)) is not None]
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
            self._update_plans[endpoint_name] = make_plan(statuses, failure_reason, seconds)

    def status_of(self, endpoint_name: str, region: str | None = None) -> str:
        """The stored status, without consuming a scheduled step (unlike DescribeEndpoint)."""
        key = (self.account_id, region or self.region, endpoint_name)
        self._reap(sagemaker_backends[self.account_id][key[1]])
        self._sync_rollouts()  # a guardrail deployment due to settle by now
        endpoint = find_endpoint(key)
        if endpoint is None:
            raise KeyError(endpoint_name)
        with self._lock:
            self._advance(key, endpoint, consume=False)
        return str(endpoint.endpoint_status)

    def seed_logs(
        self,
        endpoint_name: str,
        lines: Iterable[str],
        stream: str = "AllTraffic/i-0123",
        *,
        region: str | None = None,
        start_ms: int | None = None,
        step_ms: int = 1,
        component: str | None = None,
    ) -> str:
        """Write ``lines`` as log events in the endpoint's log group (the inference
        ``component``'s group when one is named); returns the group name.

        Creates the group and stream if missing. Timestamps increase by ``step_ms`` and end at
        "now" unless ``start_ms`` is given. Goes straight to moto's logs backend, which the
        in-process ``ThreadedMotoServer`` shares, so it works in both modes.
        """
        messages = list(lines)
        backend = logs_backends[self.account_id][region or self.region]
        group = component_log_group(component) if component else endpoint_log_group(endpoint_name)
        backend.ensure_log_group(group)
        backend.ensure_log_stream(group, stream)
        if not messages:
            return group
        if start_ms is None:  # ending at the sandbox clock's now
            start_ms = int(self.clock.now() * 1000) - step_ms * (len(messages) - 1)
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


def _harness() -> SageMakerHarness:
    # Patched methods exist only while a harness is installed, but a request racing with
    # uninstall could still land here; failing loudly beats silently skipping the hook.
    if _active is None:
        raise RuntimeError("sm_peagle moto harness is not installed")
    return _active


def _patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""
    return (
        config_patches()
        + model_patches()
        + endpoint_patches(_harness)
        + component_patches(_harness)
        + shape_patches()
        + monitoring_patches(lambda b, name, old: _harness().alarms.on_put(b, name, old))
        + alarm_patches(lambda: _harness().alarms, lambda: _harness().evaluate_alarms())
        + metrics_patches()
        + scheduler_patches()
        + training_patches(lambda: _harness().training, lambda: _harness().clock.now())
        + scaling_patches(lambda: _harness().scaling, lambda: _harness().clock.now())
        + request_log_patches(lambda: _harness().requests)
        + clock_patches(lambda: _harness().clock.naive_utcnow())
    )


@contextmanager
def installed_harness(**options: Any) -> Iterator[SageMakerHarness]:
    """``with installed_harness(default_schedule=[...]) as harness:`` convenience wrapper."""
    harness = SageMakerHarness(**options)
    with harness:
        yield harness
