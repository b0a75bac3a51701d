"""The results of `status`, `ls`, `logs`, `delete` and `gc` (sm_peagle.ops.endpoints):
frozen dataclasses read by attribute, `to_dict()` the command's `--json` document.
Pure: no AWS, no CLI."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .result import DocumentResult, KeyAccess

__all__ = [
    "ComponentStatus",
    "DeleteResult",
    "EndpointStatus",
    "EndpointSummary",
    "GcResult",
    "LogEvent",
    "LogStream",
    "UnfinishedOperation",
]


@dataclass(frozen=True, kw_only=True)
class ComponentStatus(DocumentResult):
    """One inference component of `EndpointStatus.components`; `to_dict()` is its row in
    `peagle status --json`.

    Attributes:
        name: The InferenceComponentName.
        status: SageMaker's InferenceComponentStatus.
        failure_reason: Why SageMaker failed it, or None.
        model: The model it names (None for an inline container).
        mode: The decoding mode it serves (p-eagle, eagle3, baseline), or None.
        k: The K it serves, or None.
        image: Its serving image URI.
        speculative_config: vLLM's speculative config as deployed, or None.
        accelerators_per_copy: GPUs each copy takes.
        desired_copies: The copy count SageMaker is moving to.
        current_copies: The copies running now.
        scaled_to_zero: True when both are 0.
        autoscaling: Its copy-count autoscaling (`min`, `max`, ...), or None.
    """

    name: str
    status: str | None = None
    failure_reason: str | None = None
    model: str | None = None
    mode: str | None = None
    k: int | None = None
    image: str | None = None
    speculative_config: dict[str, Any] | None = None
    accelerators_per_copy: int | None = None
    desired_copies: int | None = None
    current_copies: int | None = None
    scaled_to_zero: bool | None = None
    autoscaling: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class UnfinishedOperation(DocumentResult):
    """An operation on the endpoint that did not finish, in `EndpointStatus.unfinished`;
    `to_dict()` is its row in `peagle status --json`.

    Attributes:
        operation: The operation's id, or None (made without an operation tag).
        owner: The process that ran it (`host:pid`), or None.
        state: `running` (its process may still be at it) or `unfinished` (it is over).
        resources: What it left, one line each.
        undo: The command that removes what it left, or None.
        finish: The command that finishes it, or None.
    """

    operation: str | None = None
    owner: str | None = None
    state: str = "unfinished"
    resources: list[str] = field(default_factory=list)
    undo: str | None = None
    finish: str | None = None


@dataclass(frozen=True, kw_only=True)
class EndpointStatus(DocumentResult):
    """`status`: the endpoint as SageMaker describes it, read by attribute; `to_dict()` is
    the `peagle status --json` document (the fields it had, in order). A one-model endpoint
    has `mode`, `k`, `image` and its data sources; one hosting inference components has
    `components` (one document each) instead; a broken one (its config or model gone) has
    `problem` and `fix` and stops there. A field the endpoint does not have is None.

    Attributes:
        endpoint: The endpoint's name.
        status: SageMaker's EndpointStatus (InService, Creating, Updating, Failed, ...).
        failure_reason: Why SageMaker failed it, or None.
        endpoint_config: The EndpointConfigName it runs.
        created: When it was created (ISO 8601).
        age_seconds: Seconds since it was created.
        unfinished: Operations on it that did not finish (`UnfinishedOperation`:
            `operation`, `state`, `resources`, and the `undo` / `finish` commands).
        variant: The production variant's name.
        instance_type: The variant's instance type (the first pool's, with several).
        instance_pools: Every instance type of a variant with several pools, else None.
        instance_count: Instances running now.
        desired_instance_count: Instances SageMaker is moving to.
        usd_per_hour: The catalog's price of those instances in this region, or None.
        price: The price as a line naming its region and source, or why it is unknown.
        model: The variant's model (None when inference components name their own).
        managed_instance_scaling: The variant's managed scaling (`min`, `max`, `scale_in`),
            or None.
        hosting: "inference-components" for an endpoint hosting them, else None.
        mode: The decoding mode served (p-eagle, eagle3, baseline; "components" on an
            endpoint hosting inference components), or None when unknown.
        k: The K (draft tokens per step) served, or None (baseline, or not a peagle spec).
        image: The serving image URI.
        speculative_config: vLLM's speculative config as deployed, or None.
        model_data: The S3 URI of the weights, or None when the image holds them.
        additional_data: Other data sources, channel -> S3 URI (the drafter's is `eagle`).
        autoscaling: The variant's autoscaling (`min`, `max`, `policies`), or None.
        components: The inference components it hosts (`ComponentStatus`: `name`,
            `status`, `mode`, `k`, `desired_copies`, `current_copies`, ...), or None.
        problem: What is broken (its config or model is missing), or None.
        fix: The command that removes a broken endpoint, or None.
        speculation: peagle's speculation monitoring of a one-model endpoint (`alarm`,
            `alarm_state`, the last hour's `acceptance_length_1h` and
            `draft_acceptance_rate_1h`, None for an hour without data; `unreadable`
            says why when CloudWatch denied DescribeAlarms), or None when it has no
            peagle alarm (monitoring off).
        rollout: A deployment in progress (`new_config`, `strategy`, `phase`,
            `new_share`, `bake_started`, `bake_left_s`, `alarms` with their `state`), or
            None when none is pending.
        spend_usd: An estimate of what it has cost since its creation (on-demand price x
            instances x hours on AWS's clock, following its scaling history), or None
            when the price is unknown (`spend_note` says why).
        projected_30d_usd: An estimate of 30 days at its current size, or None likewise.
        spend_note: How the estimate was made and what it cannot see, or why it is
            unknown.
        expires_at: When an EventBridge Scheduler schedule deletes it (`--ttl`; ISO UTC,
            its `peagle:expires` tag), or None.
        expires_in_s: Seconds left on AWS's clock (negative once past), or None.
        expiry: "scheduled", "overdue" (two minutes past `expires_at` and still there),
            or "none".
        expiry_role: The `--ttl-role` its schedule runs as, or None (peagle's own role).
        expiry_problem: With "overdue": what is known of why (the schedule's state, and
            on the sandbox its last attempt's error), else None.
    """

    endpoint: str
    status: str
    failure_reason: str | None = None
    endpoint_config: str | None = None
    created: str | None = None
    age_seconds: int | None = None
    unfinished: list[UnfinishedOperation] | None = None
    variant: str | None = None
    instance_type: str | None = None
    instance_pools: list[str] | None = None
    instance_count: int | None = None
    desired_instance_count: int | None = None
    usd_per_hour: float | None = None
    price: str | None = None
    model: str | None = None
    managed_instance_scaling: dict[str, Any] | None = None
    hosting: str | None = None
    mode: str | None = None
    k: int | None = None
    image: str | None = None
    speculative_config: dict[str, Any] | None = None
    model_data: str | None = None
    additional_data: dict[str, str] | None = None
    autoscaling: dict[str, Any] | None = None
    components: list[ComponentStatus] | None = None
    problem: str | None = None
    fix: str | None = None
    speculation: dict[str, Any] | None = None
    rollout: dict[str, Any] | None = None
    spend_usd: float | None = None
    projected_30d_usd: float | None = None
    spend_note: str | None = None
    # expiry (issue 39; lifecycle/expiry_read.py), on AWS's clock
    expires_at: str | None = None
    expires_in_s: int | None = None
    expiry: str = "none"
    expiry_role: str | None = None
    expiry_problem: str | None = None

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> EndpointStatus:
        """The status of `doc` (`status`'s document), its rows typed."""
        rows = {"components": ComponentStatus, "unfinished": UnfinishedOperation}
        doc = {k: _rows(rows[k], v) if k in rows and v is not None else v for k, v in doc.items()}
        return super().from_dict(doc)

    def to_dict(self) -> dict[str, Any]:
        """The `peagle status --json` document (the fields it had, in order)."""
        doc = super().to_dict()
        for key in ("components", "unfinished"):
            if doc.get(key) is not None:
                doc[key] = [row.to_dict() for row in doc[key]]
        return doc


def _rows(cls: type[DocumentResult], rows: list[dict[str, Any]]) -> list[Any]:
    return [cls.from_dict(r) for r in rows]


@dataclass(frozen=True, kw_only=True)
class DeleteResult(DocumentResult):
    """`delete`: what went, or with `dry_run` what would, and what was kept; `to_dict()` is
    the `peagle delete --json` document (the fields it had, in order).

    Attributes:
        endpoint: The endpoint's name.
        deleted: What was deleted, in order (empty when nothing was, and on a dry run).
        would_delete: With `dry_run`: what would go, in the order it would; else None.
        kept_models: Models kept (`keep_model`, or named by a component peagle did not
            create), or None when nothing was looked at (already gone).
        kept_shared: Config or model name -> the endpoints still using it (never deleted),
            or None when nothing was looked at.
        note: Why nothing was deleted ("already gone"), or None.
        dry_run: True for a dry run (nothing deleted, nothing asked), else None.
    """

    endpoint: str
    deleted: list[str] = field(default_factory=list)
    would_delete: list[str] | None = None
    kept_models: list[str] | None = None
    kept_shared: dict[str, list[str]] | None = None
    note: str | None = None
    dry_run: bool | None = None


@dataclass(frozen=True)
class LogEvent(KeyAccess):
    """One CloudWatch log event of `logs()`; `to_dict()` is its `peagle logs --json`
    document.

    Attributes:
        timestamp: The event's CloudWatch timestamp, in milliseconds since the epoch.
        stream: The log stream it was read from.
        message: The event's text exactly as stored (vLLM's format, which parsers and
            metric filters read).
        spec_decoding: The SpecDecoding metrics parsed from the line, or None for any
            other line.
        label: Where it came from: `AWS`, `SANDBOX (SIMULATED)` or
            `SANDBOX (vllm X.Y.Z, CPU, tiny model)`.
    """

    timestamp: int
    stream: str | None
    message: str
    spec_decoding: dict[str, float] | None
    label: str

    def to_dict(self) -> dict[str, Any]:
        """The event's document in `peagle logs --json`."""
        return {
            "timestamp": self.timestamp,
            "stream": self.stream,
            "message": self.message,
            "spec_decoding": self.spec_decoding,
            "label": self.label,
        }


@dataclass(frozen=True)
class EndpointSummary:
    """One endpoint of `ls`; `to_dict()` is its row in `peagle ls --json`.

    Attributes:
        endpoint: The endpoint's name.
        status: SageMaker's EndpointStatus.
        created: When it was created (ISO 8601).
        managed: Whether peagle manages it (tagged `peagle:managed`).
        spec_sha256: The hash of the spec it was deployed from, or None.
        components: The inference components it hosts (full names).
        spend_usd: An estimate of what it has cost since its creation, or None when the
            price is unknown (`spend_note` says why); as `EndpointStatus.spend_usd`.
        projected_30d_usd: An estimate of 30 days at its current size, or None likewise.
        spend_note: How the estimate was made and what it cannot see, or why it is
            unknown.
        expires_at: When its schedule deletes it (`--ttl`; ISO UTC), or None.
        expires_in_s: Seconds left on AWS's clock (negative once past), or None.
        expiry: "scheduled", "overdue" or "none" (as `EndpointStatus.expiry`).
    """

    endpoint: str
    status: str
    created: str
    managed: bool
    spec_sha256: str | None
    components: list[str] = field(default_factory=list)
    spend_usd: float | None = None
    projected_30d_usd: float | None = None
    spend_note: str | None = None
    # expiry (issue 39), on AWS's clock
    expires_at: str | None = None
    expires_in_s: int | None = None
    expiry: str = "none"

    def to_dict(self) -> dict[str, Any]:
        """The row `peagle ls --json` prints for this endpoint."""
        return {
            "endpoint": self.endpoint,
            "status": self.status,
            "created": self.created,
            "managed": self.managed,
            "spec_sha256": self.spec_sha256,
            "components": list(self.components),
            **self._spend(),
            **self._expiry_dict(),
        }

    def _spend(self) -> dict[str, Any]:
        return {
            "spend_usd": self.spend_usd,
            "projected_30d_usd": self.projected_30d_usd,
            "spend_note": self.spend_note,
        }

    def _expiry_dict(self) -> dict[str, Any]:
        return {
            "expires_at": self.expires_at,
            "expires_in_s": self.expires_in_s,
            "expiry": self.expiry,
        }


@dataclass(frozen=True)
class GcResult:
    """`gc`: what was found, what was left alone, and what was deleted (nothing on a dry
    run); `to_dict()` is the `peagle gc --json` document.

    Attributes:
        inference_components: Components whose endpoint is gone.
        endpoint_configs: Endpoint configs nothing uses.
        models: Models nothing uses.
        skipped_young: Untagged resources younger than `min_age`, left alone.
        deleted: What was deleted, in order (empty on a dry run).
        dry_run: True when nothing was deleted by request.
        endpoints: Endpoint -> why it is garbage (its deployment never completed, or its
            config or model is missing).
        running: Operation id -> the resources of an operation that may still be running
            (left alone).
        finished: Endpoint -> the operation whose completed update gc finished (its tags
            had lagged).
        settling: Endpoint -> `status` and `operation` of an update SageMaker is still
            making (not judged until it settles).
        monitoring: The monitoring of endpoints that are gone: peagle's alarms,
            dashboards, log groups (by their tags), metric filters ("<group>:<filter>") and
            transformers (the group's name).
        expiry: Expiry schedules of endpoints or components that are gone ("schedule
            peagle/<name>"), then "role peagle-ttl-deleter" once no schedule uses it.
        idle_kept: With `idle`: endpoint -> why an idle endpoint was left alone (`delete`
            would refuse it without `force`: not peagle's, or it hosts components peagle
            did not create). The idle endpoints deleted are in `endpoints`.
        training_jobs: `drafter train`'s jobs that ended Failed or Stopped: job -> its
            status and FailureReason; its files under s3://BUCKET/peagle/training/JOB/ go,
            then the job (DeleteTrainingJob). With `training`: the job named.
        training_kept: Completed training jobs: job -> why it stays (its head may be
            deployed); `gc(training=JOB)` removes one.
        training_uploads: Completed training jobs whose run's uploads are still in S3:
            job -> the s3:// prefixes that go (`source/`, `data/`, `target/`; the head
            under `output/` stays).
    """

    inference_components: list[str]
    endpoint_configs: list[str]
    models: list[str]
    skipped_young: list[str]
    deleted: list[str]
    dry_run: bool
    endpoints: dict[str, str] = field(default_factory=dict)
    running: dict[str, list[str]] = field(default_factory=dict)
    finished: dict[str, str] = field(default_factory=dict)  # endpoint -> update completed
    # endpoint -> {"status", "operation"}: SageMaker is still updating it (an update in
    # flight, perhaps one interrupted twice); `peagle update NAME --yes` finishes it
    settling: dict[str, dict[str, str | None]] = field(default_factory=dict)
    monitoring: list[str] = field(default_factory=list)
    expiry: list[str] = field(default_factory=list)
    idle_kept: dict[str, str] = field(default_factory=dict)
    training_jobs: dict[str, str] = field(default_factory=dict)
    training_kept: dict[str, str] = field(default_factory=dict)
    training_uploads: dict[str, list[str]] = field(default_factory=dict)

    @property
    def orphans(self) -> list[str]:
        """Everything found, in deletion order: the endpoints, then components (they
        name models), configs, models, monitoring, expiry schedules and role, training
        jobs, Completed training jobs' uploads."""
        return [
            *self.endpoints,
            *self.inference_components,
            *self.endpoint_configs,
            *self.models,
            *self.monitoring,
            *self.expiry,
            *self.training_jobs,
            *(uri for uris in self.training_uploads.values() for uri in uris),
        ]

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle gc --json` prints: what was found, what was deleted (or would be,
        for a dry run), what was skipped and why."""
        return {
            "endpoints": self.endpoints,
            "inference_components": self.inference_components,
            "endpoint_configs": self.endpoint_configs,
            "models": self.models,
            "skipped_young": self.skipped_young,
            "running": self.running,
            "finished": self.finished,
            "settling": self.settling,
            "monitoring": self.monitoring,
            "expiry": self.expiry,
            "deleted": self.deleted,
            "dry_run": self.dry_run,
            "idle_kept": self.idle_kept,
            "training_jobs": self.training_jobs,
            "training_kept": self.training_kept,
            "training_uploads": self.training_uploads,
        }


@dataclass(frozen=True)
class LogStream:
    """The events of `logs()`: iterate for `LogEvent`s (once; with `follow`, until
    interrupted); `to_dict()` is the `peagle logs --json` document (the events' list).

    Attributes:
        endpoint: The endpoint whose logs are read.
        component: The InferenceComponentName whose logs are read, or None.
        since_seconds: How far back the events start, in seconds.
        follow: Whether it keeps polling for new events.
        label: Where the events came from (each event carries it too).
    """

    endpoint: str
    component: str | None
    since_seconds: float
    follow: bool
    _events: Any = field(repr=False, default=())
    label: str = "AWS"

    def __iter__(self) -> Iterator[LogEvent]:
        from ..lifecycle.endpoint_logs import parse_spec_decoding

        for e in self._events:
            yield LogEvent(
                timestamp=e["timestamp"],
                stream=e.get("logStreamName"),
                message=e["message"],
                spec_decoding=parse_spec_decoding(e["message"]),
                label=self.label,
            )

    def to_dict(self) -> list[dict[str, Any]]:
        """Every event's document, oldest first (what `peagle logs --json` prints)."""
        return [e.to_dict() for e in self]
