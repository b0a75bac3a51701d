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
run [INF: peagle makes none].
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlparse
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import botocore.session
from moto.core.exceptions import JsonRESTError
from moto.scheduler.exceptions import ScheduleGroupNotFound, ValidationException
from moto.scheduler.models import EventBridgeSchedulerBackend
from moto.scheduler.responses import EventBridgeSchedulerResponse

from peagle_sandbox.testing.moto_validate import problems, validation_message

__all__ = [
    "DEFAULT_RETRY_POLICY",
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
