"""Endpoints as they are: `status`, `ls`, `logs`, and the ways they go, `delete` and `gc`.

Each is one SDK call that `peagle status|ls|logs|delete|gc` makes as it is; the CLI only
parses and renders the typed result (`to_dict()` is the command's `--json` document).

    client = sm_peagle.Client(region="us-east-1")
    for row in client.ls():
        print(row.endpoint, client.status(row.endpoint).status)
    for event in client.logs("my-endpoint", since="5m"):
        print(event.message)

They are the methods of `EndpointOps`, a part of `sm_peagle.Client`. Prompts go through
`confirm` (called with the question; it raises to stop, None proceeds, as an SDK call
does), progress lines through the client's `progress`. Arguments are checked
before any AWS request, with the same typed errors the CLI prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..errors import Call, NotFound, Param, SpecError, text
from ..planning.components.hosting import component_short_name  # what the CLI's tables show
from .endpoints_results import (  # the results, in their own module
    ComponentStatus,
    DeleteResult,
    EndpointStatus,
    EndpointSummary,
    GcResult,
    LogEvent,
    LogStream,
    UnfinishedOperation,
)
from .session import Say, Session, check_endpoint_name, seconds

__all__ = [
    "ComponentStatus",
    "DeleteResult",
    "EndpointOps",
    "EndpointStatus",
    "EndpointSummary",
    "GcResult",
    "LogEvent",
    "LogStream",
    "UnfinishedOperation",
    "component_short_name",
]

Confirm = Callable[[str], None]


def _name(name: Any, what: str = "endpoint name") -> str:
    return check_endpoint_name(name, what)


class EndpointOps(Session):
    """Endpoints as they are (`status`, `ls`, `logs`) and the ways they go (`delete`,
    `gc`): the operations of `sm_peagle.Client` on existing endpoints."""

    def status(self, name: str) -> EndpointStatus:
        """The endpoint's status, from describe calls only.

        Args:
            name: the endpoint's name.

        Returns:
            Its status, instances, mode and K (read from the deployed model), image, the
            S3 URIs of its weights (`model_data`) and other data sources
            (`additional_data`, channel -> URI: the drafter's is `eagle`), age and $/h,
            and (`speculation`) peagle's alarm state and the last hour's acceptance when
            monitoring is on (one DescribeAlarms; GetMetricData only with the alarm), and
            an estimate of its spend so far and over 30 days at its current size
            (`spend_usd`, `projected_30d_usd`, `spend_note`: on-demand catalog price x
            instances x hours on AWS's clock, following DescribeScalingActivities; None
            when peagle has no price for its type in its region).

        Raises:
            SpecError: `name` is not a SageMaker name (nothing is sent).
            NotFound: there is no such endpoint.
        """
        from ..lifecycle.inventory import endpoint_status

        name = _name(name)
        ctx = self._connect()
        sm = ctx.client("sagemaker")
        doc = endpoint_status(sm, name, aas=ctx.client("application-autoscaling"))
        if "mode" in doc and doc.get("components") is None and not doc.get("problem"):
            from .health import speculation_of

            doc["speculation"] = speculation_of(ctx, name, doc)
        if doc.get("status") in ("Updating", "RollingBack"):  # a rollout may be running
            from ..lifecycle.rollout_watch import rollout_status

            doc["rollout"] = rollout_status(ctx, name, sm.describe_endpoint(EndpointName=name))
        expiry = _expiry_of(ctx, sm, name)
        if not doc.get("problem"):
            from .endpoints_spend import billing_ends_in, status_spend

            doc.update(status_spend(ctx, name, billing_ends_in(expiry)))
        doc.update(expiry)
        return EndpointStatus.from_dict(doc)

    def ls(
        self, *, include_unmanaged: bool = False, idle: str | float | None = None
    ) -> list[EndpointSummary]:
        """The endpoints peagle manages, each with its inference components and an estimate
        of its spend so far and over 30 days at its current size.

        Args:
            include_unmanaged: list every endpoint of the region, not only those tagged
                `peagle:managed`.
            idle: only the endpoints without traffic over this window ("2h", "1d" or
                seconds, at least a minute): InService for all of it (created and last
                changed before it began) and no AWS/SageMaker Invocations on any variant
                or inference component in it (one GetMetricData), on AWS's clock.

        Returns:
            One `EndpointSummary` per endpoint.

        Raises:
            SpecError: a malformed `idle`, or one under a minute (nothing is sent).
        """
        from ..lifecycle.inventory import list_endpoints
        from .endpoints_spend import check_idle, listing

        window = check_idle(idle)
        ctx = self._connect()
        sm = ctx.client("sagemaker")
        rows = list_endpoints(sm, include_unmanaged=include_unmanaged)
        return listing(ctx, [_with_expiry(r, sm) for r in rows], window)

    def _lifecycle(self, ctx: Any) -> Any:
        from ..lifecycle.manager import Lifecycle

        return Lifecycle(ctx, say=self._say)

    def delete(
        self,
        name: str,
        *,
        keep_model: bool = False,
        force: bool = False,
        dry_run: bool = False,
        confirm: Confirm | None = None,
        keep_logs: bool = False,
    ) -> DeleteResult:
        """Delete the endpoint (its inference components first), then the config and
        models only it uses. Idempotent: `note` says "already gone". A config or model
        another endpoint (or component) uses is never deleted, nor a foreign component's
        model.

        Args:
            name: the endpoint's name.
            keep_model: keep the model(s).
            force: also delete an endpoint peagle did not create, or inference components
                someone else added to it (their scaling targets, policies and alarms go
                too; their models are kept).
            dry_run: the same reads and refusals; `would_delete` lists what would go, in
                order. Nothing is deleted and nothing is asked.
            confirm: asked first with the question (naming, with `force`, the foreign
                components that would go); it raises to stop, returns to proceed.
            keep_logs: keep the log group peagle created for monitoring (its alarm,
                dashboard, filters and transformer go all the same).

        Returns:
            What was deleted (`deleted`), kept (`kept_models`, `kept_shared`), or why
            nothing was (`note`).

        Raises:
            SpecError: `name` is not a SageMaker name, or the endpoint is not peagle's (or
                hosts components peagle did not create) and `force` is not given; nothing
                is deleted.
        """
        name = _name(name)
        lc = self._lifecycle(self._connect())
        if dry_run:
            plan = lc.deletion(name, keep_model=keep_model, force=force, keep_logs=keep_logs)
            if plan is None:
                return DeleteResult.from_dict(
                    {"endpoint": name, "deleted": [], "note": "already gone"}
                )
            return DeleteResult.from_dict({**plan.to_dict(), "dry_run": True})
        if confirm is not None:
            question = f"Delete endpoint {name} and its config/models?"
            if force:  # say what forcing destroys that is not peagle's
                from ..lifecycle.components import split_components

                foreign = split_components(lc.sm, name)[1]
                if foreign:
                    question = (
                        f"Delete endpoint {name} and its config/models, and inference "
                        f"component(s) peagle did not create: {', '.join(foreign)} (their "
                        "scaling targets, policies and alarms go too; their models are kept)?"
                    )
            confirm(question)
        return DeleteResult.from_dict(
            lc.delete(name, keep_model=keep_model, force=force, keep_logs=keep_logs)
        )

    def gc(
        self,
        *,
        dry_run: bool = False,
        min_age: str | float = "10m",
        operation: str | None = None,
        force: bool = False,
        confirm: Confirm | None = None,
        idle: str | float | None = None,
        training: str | None = None,
    ) -> GcResult:
        """Delete what peagle made that no finished deployment uses (`lifecycle.garbage`):
        endpoints whose deployment never completed or whose config or model is missing
        (their components and autoscaling first), inference components whose endpoint is
        gone, then endpoint configs and models nothing uses, and `drafter train`'s jobs
        that ended Failed or Stopped with their S3 files (a Completed job's head is kept,
        in `training_kept`; `training` names one to delete). Nothing an operation that may
        still be running made is touched (listed in `running`); adopted resources are
        never collected. An endpoint SageMaker is still updating is listed in `settling`
        (its status, the update's operation), not judged: what that update leaves is known
        once it settles.

        Args:
            dry_run: only list what would go.
            min_age: skip an untagged resource younger than this ("10m", "2h", "1d" or
                seconds): a deploy may still be using it. Ages are on AWS's clock (its
                CreationTime and the `Date` of AWS's answers), not this machine's.
            operation: only this operation's resources.
            force: with `operation`, even if that operation may still be running; with
                `training`, even if a model serves the job's head.
            confirm: asked before anything is deleted; it raises to stop.
            idle: instead of the leftovers, delete the endpoints without traffic over
                this window ("24h", "1d" or seconds; as `ls(idle=)` finds them) that
                `delete` would delete without `force`, each as `delete` deletes it. An
                endpoint without the peagle:managed tag, or hosting components peagle did
                not create, is never deleted (`idle_kept` says why). `min_age` does not
                apply.
            training: instead of the leftovers, this one `drafter train` job (a
                `peagle-train-*` name with the peagle:managed tag) that has ended, even
                Completed: its files under s3://BUCKET/peagle/training/JOB/ (its head
                among them), then the job. Without it, gc removes the jobs that ended
                Failed or Stopped, and of a Completed one only its uploads
                (`training_uploads`): its head is kept (`training_kept`), since it may be
                deployed, and goes only when named.

        Returns:
            What was found, skipped, finished and deleted (nothing on a dry run).

        Raises:
            SpecError: a malformed `min_age`, `operation` or `idle`, `force` without
                `operation`, or `idle` with `operation`, or `training` that is not a
                `peagle-train-*` name or comes with another of them (nothing is sent);
                a named job that is not peagle's, has not ended, or whose head a model
                serves without `force` (nothing is deleted).
        """
        from ..lifecycle.components import deregister_component_scaling, split_components
        from ..lifecycle.garbage import find_garbage
        from ..lifecycle.monitoring_read import monitoring_label
        from ..lifecycle.operation import check_id
        from .endpoints_spend import check_idle, gc_idle

        min_age_seconds = seconds(min_age, "min_age") or 0.0
        window = check_idle(idle)
        if window is not None and (operation is not None or force):
            raise SpecError(
                text(
                    "{idle} deletes idle endpoints; {op} and {force} are for one operation's "
                    "leftovers",
                    idle=Param("idle"),
                    op=Param("operation"),
                    force=Param("force"),
                ),
                remedy="run them as two commands",
                field="idle",
                rule="idle without operation or force",
            )
        if training is not None:
            _check_training_job(training, window is not None or operation is not None)
        if operation is not None:
            operation = check_id(operation)
        if force and operation is None and training is None:
            raise SpecError(
                "force removes the resources of one operation that may still be running; "
                "it needs that operation named",
                remedy=text(
                    "add {op} (the id `{status}` or the interrupted command printed)",
                    op=Param("operation", "OP"),
                    status=Call("status"),
                ),
                field="operation",
                rule="force needs an operation",
            )
        lc = self._lifecycle(self._connect())
        if window is not None:
            return gc_idle(lc, window, dry_run=dry_run, confirm=confirm)
        if training is not None:
            return _gc_training_job(lc, training, dry_run, confirm, force)
        found = find_garbage(
            lc.sm, min_age_seconds=min_age_seconds, operation=operation, force=force, aws=lc.aws
        )
        result = GcResult(
            inference_components=found.inference_components,
            endpoint_configs=found.endpoint_configs,
            models=found.models,
            skipped_young=found.young,
            deleted=[],
            dry_run=dry_run,
            endpoints=found.endpoints,
            running=found.running,
            monitoring=[monitoring_label(kind, name) for kind, name, _ in found.monitoring],
            expiry=found.expiry,
            settling={
                ep: {"status": status, "operation": op}
                for ep, (status, op) in found.settling.items()
            },
            training_jobs=found.training,
            training_kept=found.training_kept,
            training_uploads=found.training_uploads,
        )
        if (not result.orphans and not found.unfinished_updates) or dry_run:
            if dry_run:  # frozen: filled in, not replaced
                result.finished.update(found.unfinished_updates)
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
        for kind, names in (
            ("endpoint_config", result.endpoint_configs),
            ("model", result.models),
        ):
            for n in names:
                if n not in done and lc.delete_and_confirm(kind, n):
                    result.deleted.append(n)
        if found.monitoring:  # after the endpoints: theirs, by the same ownership rules
            from ..lifecycle.monitoring import remove_one

            for kind, n, ep in found.monitoring:
                if remove_one(lc.aws, kind, n, ep):
                    result.deleted.append(monitoring_label(kind, n))
        _remove_expiry(lc, found.expiry, result.deleted)
        if found.training or found.training_uploads:
            from ..lifecycle.training_gc import remove_training_garbage

            result.deleted.extend(remove_training_garbage(lc.sm, lc.aws.client("s3"), found))
        return result

    def logs(
        self,
        name: str,
        *,
        since: str | float = "10m",
        follow: bool = False,
        until: str | None = None,
        component: str | None = None,
    ) -> LogStream:
        """The CloudWatch log events of the endpoint, or of one of its inference
        components (its own log group, which outlives it), oldest first. Each event's
        `label` says where it came from (the sandbox's engine, or AWS).

        Args:
            name: the endpoint's name.
            since: how far back from AWS's now (the `Date` of its answers): "5m", "2h",
                "1h30m", "1d" or seconds.
            follow: keep polling for new events (like tail -f); iterate until interrupted.
            until: follow (it implies `follow`) until an event whose message contains this
                text, and end after it: `until="SpecDecoding metrics"` waits for vLLM's
                next metrics line, which it writes every 10 s while the endpoint generates.
            component: read this inference component's logs (full or short name).

        Returns:
            A `LogStream`: iterate it for `LogEvent`s.

        Raises:
            SpecError: a malformed `since`, an empty `until`, a component the endpoint does
                not host, or `follow`/`until` without `component` on an endpoint that hosts
                components (before any request where the arguments alone tell).
            NotFound: the name has neither an endpoint nor logs.
        """
        from .. import plugins
        from ..lifecycle.endpoint_logs import fetch_log_events, follow_log_events

        name = _name(name)
        since_s = seconds(since, "since")
        assert since_s is not None
        if until is not None and not until.strip():
            raise SpecError(
                text("{until}: empty text would match every line"),
                remedy="give the text to wait for, e.g. SpecDecoding metrics",
                field="until",
                value=until,
            )
        if component is not None:
            _name(component, "component")
        ctx = self._connect()
        if component is None:
            _check_log_source(ctx, name)
        # Following is asked for by `until` (which implies it) or `follow`: name the one given.
        following = None
        if until is not None or follow:
            following = Param("until") if until else Param("follow")
        follow = following is not None
        ic = _log_component(ctx, name, component, self._say, following)
        if follow:
            events: Any = follow_log_events(ctx, name, since=since_s, component=ic)
        else:
            events = fetch_log_events(ctx, name, since=since_s, component=ic)
        if until is not None:
            events = _through_first(events, until)
        return LogStream(name, ic, since_s, follow, events, label=plugins.source_label())


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
        raise NotFound(
            f"endpoint {name} does not exist and has no logs",
            remedy=text("see `{ls}`", ls=Call("ls")),
        )


def _log_component(
    aws: Any, name: str, component: str | None, say: Say, following: Param | None
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
        add = text("add {component} with one of {c}", c=choices(name, names)) if names else ""
        if names and following:
            raise SpecError(
                text(
                    "{name} hosts inference components, whose container logs are in their "
                    "own log groups: {following} on the endpoint's would wait for lines that "
                    "never come",
                    name=name,
                    following=following,
                ),
                remedy=add,
                field="component",
            )
        if names:
            say(
                text(
                    "{name} hosts inference components, whose container logs are in their "
                    "own log groups: {add}",
                    name=name,
                    add=add,
                )
            )
        return None
    full = component_full_name(name, component)
    if names and (component in names or full in names):  # hosted now: the usual check
        return resolve_component(sm, name, component)
    for candidate in (full, component):
        if _group_exists(aws, log_group(name, candidate)):
            return candidate  # deleted, or not listed: its logs remain
    return resolve_component(sm, name, component)


def _through_first(events: Any, wanted: str) -> Iterator[dict[str, Any]]:
    """`events` up to and including the first whose message contains `wanted`."""
    for e in events:
        yield e
        if wanted in e["message"]:
            return


def _expiry_of(ctx: Any, sm: Any, name: str) -> dict[str, Any]:
    """`status`'s expiry fields (lifecycle/expiry_read.py), on AWS's clock; with
    `expiry_problem` saying why an overdue endpoint is still there."""
    from ..aws import aws_now
    from ..lifecycle.expiry_read import expiry_fields, schedule_problem
    from ..lifecycle.spec_tags import tag_dict

    desc = sm.describe_endpoint(EndpointName=name)
    tags = tag_dict(sm.list_tags(ResourceArn=desc["EndpointArn"]).get("Tags", []))
    out = expiry_fields(tags, aws_now(sm), desc.get("EndpointStatus"))
    out["expiry_problem"] = schedule_problem(ctx, name) if out["expiry"] == "overdue" else None
    return out


def _with_expiry(row: dict[str, Any], sm: Any) -> dict[str, Any]:
    """An `ls` row with its expiry fields, on AWS's clock (the last answer's Date)."""
    from ..aws import aws_now
    from ..lifecycle.expiry_read import expiry_fields

    tag = row.pop("expires_at", None)
    fields = expiry_fields({"peagle:expires": tag} if tag else {}, aws_now(sm), row.get("status"))
    return {**row, **{k: fields[k] for k in ("expires_at", "expires_in_s", "expiry")}}


def _remove_expiry(lc: Any, labels: list[str], deleted: list[str]) -> None:
    """gc's last step: the expiry schedules of gone endpoints, then peagle's unused role."""
    if labels:
        from ..lifecycle.expiry_gc import remove_expiry_garbage

        deleted.extend(remove_expiry_garbage(lc.aws, labels))


def _check_training_job(name: Any, with_others: bool) -> None:
    """`gc(training=)`: a `drafter train` job's name, alone (before any request)."""
    import re

    from ..training.request import JOB_PREFIX

    if with_others:
        raise SpecError(
            text(
                "{training} deletes one training job; {idle} and {op} are for endpoints' leftovers",
                training=Param("training"),
                idle=Param("idle"),
                op=Param("operation"),
            ),
            remedy="run them as two commands",
            field="training",
            rule="training alone",
        )
    # SageMaker's TrainingJobName: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; peagle's start so.
    if (
        not isinstance(name, str)
        or not name.startswith(JOB_PREFIX)
        or not re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", name)
    ):
        raise SpecError(
            text(
                "{training}: {v} is not a peagle training job's name",
                training=Param("training"),
                v=repr(name),
            ),  # fmt: skip
            remedy=f"give a job `drafter train` made ({JOB_PREFIX}<target>-<8 hex>)",
            field="training",
            value=name,
        )


def _gc_training_job(
    lc: Any, name: str, dry_run: bool, confirm: Confirm | None, force: bool
) -> GcResult:
    """`gc(training=NAME)`: that job's files, then the job (lifecycle/training_gc.py);
    refused while a model serves its head, unless `force`."""
    from ..lifecycle.training_gc import named_training_job, remove_training_job

    status, prefix = named_training_job(lc.sm, name, force)
    where = f" and everything under {prefix}" if prefix else ""
    result = GcResult([], [], [], [], [], dry_run, training_jobs={name: status})
    if dry_run:
        return result
    if confirm is not None:
        confirm(f"Delete training job {name} ({status}){where}?")
    result.deleted.extend(remove_training_job(lc.sm, lc.aws.client("s3"), name, prefix))
    return result
