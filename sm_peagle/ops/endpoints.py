"""Endpoints as they are: `status`, `ls`, `logs`, and the ways they go, `delete` and `gc`.

Each is one SDK call that `peagle status|ls|logs|delete|gc` makes as it is; the CLI only
parses and renders the typed result (`to_dict()` is the command's `--json` document).

    import sm_peagle
    for row in sm_peagle.ls():
        print(row.endpoint, sm_peagle.status(row.endpoint).status)
    for event in sm_peagle.logs("my-endpoint", since="5m"):
        print(event.message)

Prompts go through `confirm` (called with the question; it raises to stop, None
proceeds, as an SDK call does), progress lines through `say`. Arguments are checked
before any AWS request, with the same typed errors the CLI prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import NotFound, SpecError
from ..planning.components.hosting import component_short_name  # what the CLI's tables show
from .result import DocumentResult, KeyAccess
from .session import OnConnect, Say, check_endpoint_name, context, quiet, seconds

__all__ = [
    "DeleteResult",
    "EndpointStatus",
    "EndpointSummary",
    "GcResult",
    "LogEvent",
    "LogStream",
    "delete",
    "gc",
    "logs",
    "ls",
    "component_short_name",
    "status",
]

Confirm = Callable[[str], None]


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
        unfinished: Operations on it that did not finish, one document each (`operation`,
            `state`, `resources`, and the `undo` / `finish` commands).
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
        components: The inference components it hosts, one document each (`name`,
            `status`, `mode`, `k`, `desired_copies`, `current_copies`, ...), or None.
        problem: What is broken (its config or model is missing), or None.
        fix: The command that removes a broken endpoint, or None.
    """

    endpoint: str
    status: str
    failure_reason: str | None = None
    endpoint_config: str | None = None
    created: str | None = None
    age_seconds: int | None = None
    unfinished: list[dict[str, Any]] | None = None
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
    components: list[dict[str, Any]] | None = None
    problem: str | None = None
    fix: str | None = None


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
    """One row of `peagle ls`."""

    endpoint: str
    status: str
    created: str
    managed: bool
    spec_sha256: str | None
    components: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The row `peagle ls --json` prints for this endpoint."""
        return {
            "endpoint": self.endpoint,
            "status": self.status,
            "created": self.created,
            "managed": self.managed,
            "spec_sha256": self.spec_sha256,
            "components": list(self.components),
        }


@dataclass
class GcResult:
    """`peagle gc`: what was found (by kind; `endpoints` maps each to why it is garbage),
    what was left alone (`skipped_young`: untagged and younger than `min_age`;
    `running`: operation id -> the resources of an operation that may still be running),
    and what was deleted (nothing on a dry run)."""

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

    @property
    def orphans(self) -> list[str]:
        """Everything found, in deletion order: the endpoints, then components (they
        name models), configs, models."""
        return [*self.endpoints, *self.inference_components, *self.endpoint_configs, *self.models]

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
            "deleted": self.deleted,
            "dry_run": self.dry_run,
        }


@dataclass
class LogStream:
    """The events of `logs()`: iterate for `LogEvent`s (once; with `follow`, until
    interrupted). `component` is the InferenceComponentName read, if any; `label` is
    where the events came from, which each event carries too."""

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


def _name(name: Any, what: str = "endpoint name") -> str:
    return check_endpoint_name(name, what)


def status(
    name: str,
    *,
    region: str | None = None,
    aws: Any = None,
    on_connect: OnConnect | None = None,
) -> EndpointStatus:
    """The endpoint's status, instances, mode and K (read from the deployed model),
    image, the S3 URIs of its weights (`model_data`) and other data sources
    (`additional_data`, channel -> URI: the drafter's is `eagle`), age and $/h, from
    describe calls only. NotFound if there is no such endpoint."""
    from ..lifecycle.inventory import endpoint_status

    name = _name(name)
    ctx = context(region, aws, on_connect)
    doc = endpoint_status(ctx.client("sagemaker"), name, aas=ctx.client("application-autoscaling"))
    return EndpointStatus.from_dict(doc)


def ls(
    *,
    include_unmanaged: bool = False,
    region: str | None = None,
    aws: Any = None,
    on_connect: OnConnect | None = None,
) -> list[EndpointSummary]:
    """The endpoints peagle manages (tagged `peagle:managed`), or with
    `include_unmanaged` every endpoint of the region, each with its components."""
    from ..lifecycle.inventory import list_endpoints

    ctx = context(region, aws, on_connect)
    rows = list_endpoints(ctx.client("sagemaker"), include_unmanaged=include_unmanaged)
    return [EndpointSummary(**r) for r in rows]


def _lifecycle(aws: Any, say: Say) -> Any:
    from ..lifecycle.manager import Lifecycle

    return Lifecycle(aws, say=say)


def delete(
    name: str,
    *,
    keep_model: bool = False,
    force: bool = False,
    dry_run: bool = False,
    confirm: Confirm | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
) -> DeleteResult:
    """Delete the endpoint (its inference components first), then the config and models
    only it uses. Idempotent (`note` says "already gone"). Refused (SpecError, nothing
    deleted) for an endpoint without the peagle:managed tag, or hosting components peagle
    did not create, unless `force`; a config or model another endpoint (or component)
    uses is never deleted, nor a foreign component's model. `confirm` is asked first
    (with `force`, naming the foreign components that would go). `dry_run`: the same
    reads and refusals, and `would_delete` lists what would go, in order; nothing is
    deleted and nothing is asked."""
    name = _name(name)
    ctx = context(region, aws, on_connect)
    lc = _lifecycle(ctx, say or quiet)
    if dry_run:
        plan = lc.deletion(name, keep_model=keep_model, force=force)
        if plan is None:
            return DeleteResult.from_dict({"endpoint": name, "deleted": [], "note": "already gone"})
        return DeleteResult.from_dict({**plan.to_dict(), "dry_run": True})
    if confirm is not None:
        question = f"Delete endpoint {name} and its config/models?"
        if force:  # say what --force destroys that is not peagle's
            from ..lifecycle.components import split_components

            foreign = split_components(lc.sm, name)[1]
            if foreign:
                question = (
                    f"Delete endpoint {name} and its config/models, and inference "
                    f"component(s) peagle did not create: {', '.join(foreign)} (their "
                    "scaling targets, policies and alarms go too; their models are kept)?"
                )
        confirm(question)
    return DeleteResult.from_dict(lc.delete(name, keep_model=keep_model, force=force))


def gc(
    *,
    dry_run: bool = False,
    min_age: str | float = "10m",
    operation: str | None = None,
    force: bool = False,
    confirm: Confirm | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
) -> GcResult:
    """Delete what peagle made that no finished deployment uses (`lifecycle.garbage`):
    endpoints whose deployment never completed or whose config or model is missing (their
    components and autoscaling first), inference components whose endpoint is gone, then
    endpoint configs and models nothing uses. Nothing an operation that may still be
    running made is touched (listed in `running`); an untagged resource younger than
    `min_age` ("10m", "2h" or seconds) is skipped. `operation`: only that operation's
    resources; `force` (only with `operation`): even if it may still be running. Adopted
    resources are never collected. With `dry_run`, only list them. An endpoint SageMaker
    is still updating is listed in `settling` (its status, the update's operation), not
    judged: what that update leaves is known once it settles."""
    from ..errors import SpecError
    from ..lifecycle.components import deregister_component_scaling, split_components
    from ..lifecycle.garbage import find_garbage
    from ..lifecycle.operation import check_id

    min_age_seconds = seconds(min_age, "min_age") or 0.0
    if operation is not None:
        operation = check_id(operation)
    if force and operation is None:
        raise SpecError(
            "force removes the resources of one operation that may still be running; "
            "it needs that operation named",
            remedy="add --operation OP (the id `peagle status` or the interrupted command printed)",
        )
    ctx = context(region, aws, on_connect)
    lc = _lifecycle(ctx, say or quiet)
    found = find_garbage(lc.sm, min_age_seconds=min_age_seconds, operation=operation, force=force)
    result = GcResult(
        inference_components=found.inference_components,
        endpoint_configs=found.endpoint_configs,
        models=found.models,
        skipped_young=found.young,
        deleted=[],
        dry_run=dry_run,
        endpoints=found.endpoints,
        running=found.running,
        settling={
            ep: {"status": status, "operation": op} for ep, (status, op) in found.settling.items()
        },
    )
    if (not result.orphans and not found.unfinished_updates) or dry_run:
        result.finished = dict(found.unfinished_updates) if dry_run else {}
        return result
    if confirm is not None:
        confirm(f"Delete {len(result.orphans)} resources no finished deployment uses?")
    if found.unfinished_updates:
        from ..lifecycle.reconcile import finish_update

        for ep, op in found.unfinished_updates.items():
            for line in finish_update(lc, ep):
                lc.say(line)
                if line.startswith("removed unused "):
                    result.deleted.append(line.rsplit(" ", 1)[-1])
            result.finished[ep] = op  # what it freed is in `deleted`, once
    for ep in result.endpoints:  # first: what they use becomes free
        desc = lc.sm.describe_endpoint(EndpointName=ep)
        for ic in split_components(lc.sm, ep)[0]:
            deregister_component_scaling(lc, ic)
            if lc.delete_and_confirm("inference_component", ic):
                result.deleted.append(ic)
        lc.deregister_autoscaling(ep, desc)
        if lc.delete_and_confirm("endpoint", ep):
            result.deleted.append(ep)
    for ic in result.inference_components:  # before models: they name them
        deregister_component_scaling(lc, ic)
        if lc.delete_and_confirm("inference_component", ic):
            result.deleted.append(ic)
    done = set(result.deleted)  # what finishing an update removed already
    for kind, names in (("endpoint_config", result.endpoint_configs), ("model", result.models)):
        for n in names:
            if n not in done and lc.delete_and_confirm(kind, n):
                result.deleted.append(n)
    return result


def _group_exists(aws: Any, group: str) -> bool:
    found = aws.client("logs").describe_log_groups(logGroupNamePrefix=group)
    return any(g["logGroupName"] == group for g in found.get("logGroups", []))


def _check_log_source(aws: Any, name: str) -> None:
    """A name with neither an endpoint nor a log group is a mistake (NotFound); a
    deleted endpoint whose logs remain is not."""
    from botocore.exceptions import ClientError

    from ..lifecycle.endpoint_logs import log_group

    try:
        aws.client("sagemaker").describe_endpoint(EndpointName=name)
        return
    except ClientError as e:
        if "Could not find" not in str(e):
            raise
    if not _group_exists(aws, log_group(name)):
        raise NotFound(f"endpoint {name} does not exist and has no logs", remedy="see `peagle ls`")


def _log_component(
    aws: Any, name: str, component: str | None, say: Say, flag: str, following: str | None
) -> str | None:
    """The inference component whose logs are read: one the endpoint hosts (full or
    short name), or a deleted one whose log group remains (SpecError if neither).
    Without `component` on an endpoint with components: a note naming them, or when
    following a SpecError, since the container lines followed for would never come."""
    from ..lifecycle.component_targets import choices, components_of, resolve_component
    from ..lifecycle.endpoint_logs import log_group
    from ..planning.components.hosting import component_full_name

    sm = aws.client("sagemaker")
    names = components_of(sm, name)
    if component is None:
        if names and following:
            raise SpecError(
                f"{name} hosts inference components, whose container logs are in their own "
                f"log groups: {following} on the endpoint's would wait for lines that never come",
                remedy=f"add {flag} with one of {choices(name, names)}",
            )
        if names:
            say(
                f"{name} hosts inference components, whose container logs are in their own "
                f"log groups: add {flag} with one of {choices(name, names)}"
            )
        return None
    full = component_full_name(name, component)
    if names and (component in names or full in names):  # hosted now: the usual check
        return resolve_component(sm, name, component, flag=flag)
    for candidate in (full, component):
        if _group_exists(aws, log_group(name, candidate)):
            return candidate  # deleted, or not listed: its logs remain
    return resolve_component(sm, name, component, flag=flag)


def logs(
    name: str,
    *,
    since: str | float = "10m",
    follow: bool = False,
    until: str | None = None,
    component: str | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
    _cli: bool = False,
) -> LogStream:
    """The CloudWatch log events of the endpoint, or with `component` of that inference
    component (its own log group, which outlives it), oldest first. `since`: how far back,
    "5m", "2h", "1h30m" or seconds; `follow`: keep polling for new events (like tail -f).
    `until`: follow (it implies `follow`) until an event whose message contains this text,
    and end after it: `until="SpecDecoding metrics"` waits for vLLM's next metrics line,
    which it writes every 10 s while the endpoint generates tokens.
    NotFound for a name with neither an endpoint nor logs; SpecError (before any request)
    for a malformed `since`, a component the endpoint does not host, or `follow`/`until`
    without `component` on an endpoint that hosts components. Each event's
    `label` says where it came from (the sandbox's engine, or AWS)."""
    from .. import settings
    from ..lifecycle.endpoint_logs import fetch_log_events, follow_log_events

    name = _name(name)
    since_s = seconds(since, "since")
    assert since_s is not None
    if until is not None and not until.strip():
        flag = "--until" if _cli else "until="
        raise SpecError(
            f"{flag}: empty text would match every line",
            remedy="give the text to wait for, e.g. SpecDecoding metrics",
        )
    if component is not None:
        _name(component, "component")
    ctx = context(region, aws, on_connect)
    if component is None:
        _check_log_source(ctx, name)
    flag = "--component" if _cli else "component="
    # Following is asked for by --until (which implies it) or --follow: name the one given.
    following = None
    if until is not None or follow:
        following = (
            ("--until" if _cli else "until=") if until else ("--follow" if _cli else "follow=")
        )
    follow = following is not None
    ic = _log_component(ctx, name, component, say or quiet, flag, following)
    if follow:
        events: Any = follow_log_events(ctx, name, since=since_s, component=ic)
    else:
        events = fetch_log_events(ctx, name, since=since_s, component=ic)
    if until is not None:
        events = _through_first(events, until)
    return LogStream(name, ic, since_s, follow, events, label=settings.source_label())


def _through_first(events: Any, text: str) -> Iterator[dict[str, Any]]:
    """`events` up to and including the first whose message contains `text`."""
    for e in events:
        yield e
        if text in e["message"]:
            return
