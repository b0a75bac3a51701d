"""EventBridge Scheduler for the moto harness: its requests checked as AWS checks them, and
one-time schedules run on the sandbox clock (moto 5.2.5 stores schedules and never runs one).

The front door (every scheduler operation; botocore 1.44.8's `scheduler` model):
- each request is checked against botocore's model (`moto_validate.problems`: required
  members, lengths, enums, patterns) and refused with Scheduler's `ValidationException`
  in AWS's validation wording. moto itself checks none of it.
- CreateSchedule into a group that does not exist is `ResourceNotFoundException` (moto: a
  KeyError, an HTTP 500), as are DeleteScheduleGroup and the tag calls on a missing group.
- CreateScheduleGroup of an existing name is `ConflictException` (moto replaced the group,
  dropping its schedules; ConflictException is among the model's errors) [INF: wording].
- UpdateSchedule replaces the whole schedule: "if you do not set an optional field in your
  request, that field will be set to its system-default value after the update" (the
  operation's documentation). moto kept ActionAfterCompletion and set State to None.
  [INF] the system defaults: State ENABLED, timezone UTC, ActionAfterCompletion NONE
  (CreateSchedule gets the same NONE when it is omitted), RetryPolicy 86400 s / 185.
- TagResource / UntagResource / ListTagsForResource take schedule-group ARNs only (the
  model's ResourceArn pattern; "You can only assign tags to schedule groups").
- ScheduleExpression: `at(yyyy-mm-ddThh:mm:ss)`, `rate(...)` or `cron(...)`; anything else,
  or a timezone zoneinfo does not know, is a ValidationException [INF: wording]. A past
  `at()` is accepted (AWS's behaviour is not documented) and runs on the next tick [INF].

Execution (`ScheduleRunner.run`, the harness's `run_schedules`): see `_attempt` and
moto_iam_eval for the role checks. Only `at()` schedules run; rate/cron are stored, never
run [INF: peagle makes none]. Not emulated [INF]: users report CreateSchedule itself
refusing a role Scheduler cannot assume ("The execution role you provide must allow AWS
EventBridge Scheduler to assume the role.", a ValidationException; not in the API
reference); here the role is judged only when the schedule runs, so a role broken after
creation and one broken from the start fail the same visible way.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlparse
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import botocore.session
from moto.applicationautoscaling.models import applicationautoscaling_backends
from moto.core.exceptions import JsonRESTError
from moto.iam.models import iam_backends
from moto.sagemaker.models import sagemaker_backends
from moto.scheduler.exceptions import ScheduleGroupNotFound, ValidationException
from moto.scheduler.models import EventBridgeSchedulerBackend, scheduler_backends
from moto.scheduler.responses import EventBridgeSchedulerResponse
from moto.utilities.utils import get_partition

from peagle_sandbox.testing.moto_components import inference_components_of
from peagle_sandbox.testing.moto_iam_eval import evaluate, policies_of, trust_allows
from peagle_sandbox.testing.moto_scaling import DIMENSION as VARIANT_DIMENSION
from peagle_sandbox.testing.moto_validate import problems, validation_message

__all__ = [
    "DEFAULT_RETRY_POLICY",
    "ScheduleRunner",
    "at_epoch",
    "scheduler_patches",
]

# The RetryPolicy a schedule gets without one (moto and Terraform fill these; the API
# reference gives only the ranges 60-86400 s and 0-185) [INF].
DEFAULT_RETRY_POLICY = {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_OTHER = re.compile(r"^(rate|cron)\(.+\)$")
_OPERATIONS = (
    "CreateSchedule",
    "CreateScheduleGroup",
    "DeleteSchedule",
    "DeleteScheduleGroup",
    "GetSchedule",
    "GetScheduleGroup",
    "ListScheduleGroups",
    "ListSchedules",
    "ListTagsForResource",
    "TagResource",
    "UntagResource",
    "UpdateSchedule",
)


class ConflictException(JsonRESTError):
    code = 409

    def __init__(self, message: str) -> None:
        super().__init__("ConflictException", message)


@lru_cache(maxsize=1)
def _scheduler_model() -> Any:
    return botocore.session.get_session().get_service_model("scheduler")


def _snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


def request_params(response: EventBridgeSchedulerResponse, operation: str) -> dict[str, Any]:
    """The request as the client's parameters (rest-json: URI, query string and JSON body
    put back together by the model's member locations), for the model check."""
    op = _scheduler_model().operation_model(operation)
    shape = op.input_shape
    body: dict[str, Any] = {}
    raw = response.body
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if raw:
        try:
            loaded = json.loads(raw)
            body = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            body = {}
    template = op.http["requestUri"].split("?")[0]
    pattern = re.sub(r"\{(\w+)\+\}", r"(?P<\1>.+)", template)
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
    path = urlparse(response.uri).path
    found = re.fullmatch(pattern, path)
    uri = {k: unquote(v) for k, v in found.groupdict().items()} if found else {}
    query = response.querystring or {}
    params: dict[str, Any] = {}
    for name, member in shape.members.items():
        where = member.serialization.get("location")
        wire = member.serialization.get("name", name)
        if where == "uri" and wire in uri:
            params[name] = uri[wire]
        elif where == "querystring" and wire in query:
            values = query[wire]
            if member.type_name == "list":
                params[name] = list(values)
            elif member.type_name == "integer":
                try:
                    params[name] = int(values[0])
                except ValueError:
                    params[name] = values[0]
            else:
                params[name] = values[0]
        elif where is None and name in body:
            params[name] = body[name]
    return params


def check(operation: str, params: dict[str, Any]) -> None:
    """Refuse a scheduler request that breaks the model, as AWS does."""
    found = problems("scheduler", operation, params)
    if found:
        raise ValidationException(validation_message(found))


def at_epoch(expression: str, timezone: str | None) -> float | None:
    """When an `at(...)` expression fires (epoch seconds), read in its timezone; None for a
    rate/cron expression."""
    m = _AT.match(expression or "")
    if not m:
        return None
    local = datetime.fromisoformat(m.group(1)).replace(tzinfo=ZoneInfo(timezone or "UTC"))
    return local.astimezone(UTC).timestamp()


def _check_expression(params: dict[str, Any]) -> None:
    expression = params.get("ScheduleExpression", "")
    m = _AT.match(expression)
    if m:
        try:
            datetime.fromisoformat(m.group(1))
        except ValueError:
            raise ValidationException(f"Invalid Schedule Expression {expression}.") from None
    elif not _OTHER.match(expression):
        raise ValidationException(f"Invalid Schedule Expression {expression}.")
    zone = params.get("ScheduleExpressionTimezone")
    if zone:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValidationException(f"Invalid timezone {zone}.") from None


def _group_of_arn(backend: EventBridgeSchedulerBackend, arn: str) -> None:
    """A tag call on a schedule group that does not exist: ResourceNotFoundException."""
    name = arn.rsplit("/", 1)[-1]
    groups = {g.arn: g for g in backend.schedule_groups.values()}
    if arn not in groups:
        raise ScheduleGroupNotFound(name)


def scheduler_patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) for every scheduler operation: the model check, the
    checks moto lacks, then moto's own handler (or the harness's, for UpdateSchedule)."""
    originals = {op: EventBridgeSchedulerResponse.__dict__[_snake(op)] for op in _OPERATIONS}
    out: list[tuple[type, str, Any]] = []

    def make(op: str) -> Callable[[EventBridgeSchedulerResponse], str]:
        original = originals[op]

        def handler(self: EventBridgeSchedulerResponse) -> str:
            params = request_params(self, op)
            check(op, params)
            backend = self.scheduler_backend
            if op in ("CreateSchedule", "UpdateSchedule"):
                _check_expression(params)
                backend.get_schedule_group(params.get("GroupName"))  # 404 when missing
            if op == "CreateSchedule":
                result: str = original(self)
                made = backend.get_schedule(params.get("GroupName"), params["Name"])
                made.action_after_completion = params.get("ActionAfterCompletion") or "NONE"
                return result
            if op == "UpdateSchedule":
                return _update(backend, params)
            if op == "CreateScheduleGroup" and params["Name"] in backend.schedule_groups:
                raise ConflictException(f"Schedule group {params['Name']} already exists.")
            if op == "DeleteScheduleGroup":
                backend.get_schedule_group(params["Name"])  # 404 when missing
            if op in ("TagResource", "UntagResource", "ListTagsForResource"):
                _group_of_arn(backend, params["ResourceArn"])
            return str(original(self))

        handler.__name__ = _snake(op)
        handler.__doc__ = f"{op}, checked as AWS checks it (peagle_sandbox moto_scheduler)."
        return handler

    for op in _OPERATIONS:
        out.append((EventBridgeSchedulerResponse, _snake(op), make(op)))
    return out


def _update(backend: EventBridgeSchedulerBackend, params: dict[str, Any]) -> str:
    """UpdateSchedule: every field from the request; an omitted optional one goes back to
    its default (see the module docstring)."""
    schedule = backend.get_schedule(params.get("GroupName"), params["Name"])
    target = dict(params["Target"])
    target.setdefault("RetryPolicy", dict(DEFAULT_RETRY_POLICY))
    schedule.update(
        description=params.get("Description"),
        end_date=params.get("EndDate"),
        flexible_time_window=params["FlexibleTimeWindow"],
        kms_key_arn=params.get("KmsKeyArn"),
        schedule_expression=params["ScheduleExpression"],
        schedule_expression_timezone=params.get("ScheduleExpressionTimezone") or "UTC",
        start_date=params.get("StartDate"),
        state=params.get("State") or "ENABLED",
        target=target,
    )
    schedule.action_after_completion = params.get("ActionAfterCompletion") or "NONE"
    return json.dumps({"ScheduleArn": schedule.arn})


# ---------------------------------------------------------------- execution on the clock

# [INF] Scheduler's retry backoff: AWS says "exponential backoff" (RetryPolicy's model doc)
# and gives no base; the harness retries after 1, 2, 4 ... minutes, at most 30 apart.
FIRST_RETRY_S = 60
MAX_RETRY_GAP_S = 1800
_UNIVERSAL = re.compile(r"^arn:aws[a-z-]*:scheduler:::aws-sdk:([a-z0-9-]+):([A-Za-z0-9]+)$")


@dataclass
class _Progress:
    """One due schedule's attempts (keyed by its ARN and last change: an UpdateSchedule
    starts it afresh)."""

    attempts: int = 0
    next_at: float = 0.0
    finished: bool = False


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error_text(exc: Exception) -> str:
    code = getattr(exc, "error_type", None) or getattr(exc, "code", None) or type(exc).__name__
    message = getattr(exc, "message", None) or str(exc)
    return f"{code}: {message}"


def _role(account: str, region: str, arn: str) -> Any:
    try:
        return iam_backends[account][get_partition(region)].get_role_by_arn(arn)
    except Exception:  # moto's NotFoundException: the role does not exist
        return None


def _resource(
    account: str, region: str, operation: str, params: dict[str, Any]
) -> tuple[str, list[dict[str, str]]]:
    """The target call's resource ARN (SageMaker lower-cases names in ARNs) and its tags
    (for `aws:ResourceTag/...`); no tags when it does not exist."""
    backend = sagemaker_backends[account][region]
    p = get_partition(region)
    if operation == "DeleteEndpoint":
        name = str(params.get("EndpointName", ""))
        found = backend.endpoints.get(name)
        arn = f"arn:{p}:sagemaker:{region}:{account}:endpoint/{name.lower()}"
    else:
        name = str(params.get("InferenceComponentName", ""))
        found = inference_components_of(backend).get(name)
        arn = f"arn:{p}:sagemaker:{region}:{account}:inference-component/{name.lower()}"
    return arn, list(getattr(found, "tags", None) or [])


def _scaling_targets(account: str, region: str, endpoint: str) -> list[Any]:
    aas = applicationautoscaling_backends[account][region]
    prefix = f"endpoint/{endpoint}/variant/"
    return [
        t
        for t in aas.targets.get(VARIANT_DIMENSION, {}).values()
        if t.service_namespace == "sagemaker" and t.resource_id.startswith(prefix)
    ]


def _attempt(
    account: str,
    region: str,
    group_arn: str,
    schedule: Any,
    record: Callable[[str, str, dict[str, Any]], None],
) -> str | None:
    """Run one schedule's target as Scheduler would: assume the role (it exists; its trust
    allows scheduler.amazonaws.com in this schedule group's context), check the role's
    policies allow the action on the resource, then call the SageMaker backend (the
    harness's patched path: components refuse DeleteEndpoint, strict deletes apply).
    None on success, else the error."""
    target = schedule.target or {}
    role_arn = str(target.get("RoleArn", ""))
    m = _UNIVERSAL.match(str(target.get("Arn", "")))
    if not m or (m.group(1), m.group(2)) not in _TARGETS:
        return (
            f"the sandbox runs universal targets {sorted(_TARGETS)} only, not "
            f"{target.get('Arn')}"  # [INF] a limit of the harness, not AWS's
        )
    service, api = m.groups()
    operation = api[0].upper() + api[1:]
    action = f"{service}:{operation}"
    try:
        params = json.loads(target.get("Input") or "{}")
    except ValueError as e:
        return f"ValidationException: the target's Input is not JSON ({e})"
    role = _role(account, region, role_arn)
    if role is None:
        return f"AccessDeniedException: the execution role {role_arn} does not exist"
    context = {"aws:SourceAccount": account, "aws:SourceArn": group_arn}
    if not trust_allows(role.assume_role_policy_document, context):
        return (
            "AccessDeniedException: The execution role you provide must allow AWS "
            f"EventBridge Scheduler to assume the role. ({role_arn})"
        )
    resource, tags = _resource(account, region, operation, params)
    principal = (
        f"arn:{get_partition(region)}:sts::{account}:assumed-role/{role.name}/{schedule.name}"
    )
    documents = policies_of(role)
    conditions = {f"aws:ResourceTag/{t['Key']}": str(t.get("Value", "")) for t in tags}
    verdict = evaluate(documents, action, resource, conditions)
    if verdict != "allow":
        why = (
            "with an explicit deny in an identity-based policy"
            if verdict == "explicit-deny"
            else f"because no identity-based policy allows the {action} action"
        )
        return (
            f"AccessDeniedException: User: {principal} is not authorized to perform: "
            f"{action} on resource: {resource} {why}"
        )
    scaling = _scaling_targets(account, region, params.get("EndpointName", ""))
    if operation == "DeleteEndpoint" and scaling:
        # AWS's "Delete an endpoint with autoscaling": DeleteEndpoint deregisters the
        # variants' scalable targets, so the caller needs that permission too.
        dereg = "application-autoscaling:DeregisterScalableTarget"
        if any(evaluate(documents, dereg, t.arn, {}) != "allow" for t in scaling):
            return (
                "ValidationException: An Application AutoScaling scalable target exists for "
                "a variant being deleted, and the IAM identity used to invoke DeleteEndpoint "
                f"does not have {dereg} permission"
            )
    record(service, operation, params)
    backend = sagemaker_backends[account][region]
    try:
        _TARGETS[(service, api)](backend, params)
    except Exception as e:  # the backend's refusal is the attempt's error
        return _error_text(e)
    if operation == "DeleteEndpoint":
        aas = applicationautoscaling_backends[account][region]
        for t in scaling:
            aas.deregister_scalable_target("sagemaker", t.resource_id, VARIANT_DIMENSION)
    return None


_TARGETS: dict[tuple[str, str], Callable[[Any, dict[str, Any]], Any]] = {
    ("sagemaker", "deleteEndpoint"): lambda b, p: b.delete_endpoint(p["EndpointName"]),
    ("sagemaker", "deleteInferenceComponent"): lambda b, p: b.delete_inference_component(
        p["InferenceComponentName"]
    ),
}


class ScheduleRunner:
    """Runs due one-time schedules on the clock and keeps every attempt.

    A schedule is due once the clock reaches its `at()` time (read in its timezone) and it
    is ENABLED. Each call makes at most one attempt per due schedule: success removes the
    schedule when its ActionAfterCompletion is DELETE ("For one-time schedules, this
    occurs after the schedule has invoked its target once"); a failure is retried after
    the backoff above, until RetryPolicy's MaximumRetryAttempts retries are spent or the
    next one would fall after MaximumEventAgeInSeconds from the schedule's time. Then it
    stops and the schedule stays [INF: what AWS does with a one-time schedule whose every
    attempt failed is not documented]. An attempt made late (the clock jumped) is made
    at the clock's now and recorded then [INF]."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._progress: dict[tuple[str, float], _Progress] = {}
        self._runs: list[dict[str, Any]] = []

    def clear(self) -> None:
        with self._lock:
            self._progress.clear()
            self._runs.clear()

    @property
    def runs(self) -> list[dict[str, Any]]:
        """Every attempt, oldest first: schedule ("group/name"), at (ISO UTC), outcome
        ("succeeded" | "failed"), error, attempt, role, target; a failure also says
        `next_attempt_at`, or `final: true` once no retry is left."""
        with self._lock:
            return [dict(r) for r in self._runs]

    def run(self, now: float, record: Callable[[str, str, dict[str, Any]], None]) -> int:
        """One pass at `now` (epoch seconds); returns the number of attempts made."""
        made = 0
        with self._lock:
            for account, regions in list(scheduler_backends.items()):
                for region, backend in list(regions.items()):
                    for group in list(backend.schedule_groups.values()):
                        for schedule in list(group.schedules.values()):
                            made += self._consider(account, region, group, schedule, now, record)
        return made

    def _consider(
        self,
        account: str,
        region: str,
        group: Any,
        schedule: Any,
        now: float,
        record: Callable[[str, str, dict[str, Any]], None],
    ) -> int:
        if schedule.state != "ENABLED":
            return 0
        try:
            at = at_epoch(schedule.schedule_expression, schedule.schedule_expression_timezone)
        except (ValueError, ZoneInfoNotFoundError):
            return 0
        if at is None or now < at:
            return 0
        key = (schedule.arn, float(schedule.last_modified_date or 0))
        progress = self._progress.setdefault(key, _Progress(next_at=at))
        if progress.finished or now < progress.next_at:
            return 0
        progress.attempts += 1
        target = schedule.target or {}
        error = _attempt(account, region, group.arn, schedule, record)
        run: dict[str, Any] = {
            "schedule": f"{group.name}/{schedule.name}",
            "arn": schedule.arn,
            "at": _iso(now),
            "outcome": "succeeded" if error is None else "failed",
            "error": error,
            "attempt": progress.attempts,
            "role": target.get("RoleArn"),
            "target": target.get("Arn"),
        }
        if error is None:
            progress.finished = True
            if schedule.action_after_completion == "DELETE":
                group.schedules.pop(schedule.name, None)
                run["deleted"] = True
        else:
            policy = {**DEFAULT_RETRY_POLICY, **(target.get("RetryPolicy") or {})}
            gap = min(FIRST_RETRY_S * 2 ** (progress.attempts - 1), MAX_RETRY_GAP_S)
            retries_left = int(policy["MaximumRetryAttempts"]) - (progress.attempts - 1)
            too_old = now + gap - at > int(policy["MaximumEventAgeInSeconds"])
            if retries_left <= 0 or too_old:
                progress.finished = True
                run["final"] = True
            else:
                progress.next_at = now + gap
                run["next_attempt_at"] = _iso(now + gap)
        self._runs.append(run)
        return 1
