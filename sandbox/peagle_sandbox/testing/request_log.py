"""A record of every AWS request the moto harness receives: service, operation, parameters
and time, in arrival order.

Tests assert against what AWS would have been sent, not against what the client believes
it sent: the record is taken where moto dispatches a request to its backend
(``BaseResponse.call_action``), which in-process ``mock_aws`` and the threaded server (the
sandbox) share. S3 object calls have their own dispatch in moto and are recorded only as far
as they pass through ``call_action``. In the sandbox, ``GET /_peagle/requests`` returns the
record and ``DELETE /_peagle/requests`` clears it, for tests that drive the CLI in a
subprocess.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs

from moto.core.responses import BaseResponse

__all__ = ["RecordedRequest", "RequestLog", "request_log_patches"]


@dataclass(frozen=True)
class RecordedRequest:
    service: str
    operation: str
    params: dict[str, Any]
    time: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RequestLog:
    """Thread-safe, append-only until cleared."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[RecordedRequest] = []

    def record(self, item: RecordedRequest) -> None:
        with self._lock:
            self._items.append(item)

    def all(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def operations(self, service: str | None = None) -> list[str]:
        """Operation names in order, e.g. ["CreateModel", "CreateEndpointConfig", ...]."""
        return [r.operation for r in self.all() if service is None or r.service == service]

    def params(self, operation: str) -> list[dict[str, Any]]:
        return [r.params for r in self.all() if r.operation == operation]

    def to_list(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.all()]


def _params(response: BaseResponse) -> dict[str, Any]:
    """The request's parameters as the client sent them: a JSON body (sagemaker, logs,
    application-autoscaling, ...) or a query/form body (sts, iam)."""
    body = response.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if body:
        try:
            doc = json.loads(body)
            if isinstance(doc, dict):
                return doc
        except ValueError:
            pass
        form = parse_qs(body, keep_blank_values=True)
        if form:
            return {k: v[0] if len(v) == 1 else v for k, v in form.items() if k != "Action"}
    query = getattr(response, "querystring", None) or {}
    return {k: v[0] if len(v) == 1 else v for k, v in query.items() if k != "Action"}


def request_log_patches(log: Callable[[], RequestLog]) -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement): record each request, then dispatch it as moto does."""
    original = BaseResponse.call_action

    def call_action(self: BaseResponse) -> Any:
        try:
            operation = self._get_action()
            item = RecordedRequest(
                service=str(getattr(self, "service_name", "") or ""),
                operation=str(operation or ""),
                params=_params(self),
                time=time.time(),
            )
        except Exception:  # recording must never change what moto answers
            item = None
        if item is not None and item.operation:
            log().record(item)
        return original(self)

    return [(BaseResponse, "call_action", call_action)]
