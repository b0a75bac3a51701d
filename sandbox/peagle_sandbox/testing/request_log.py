"""A record of every AWS request the moto harness receives: service, operation, parameters
and time, in arrival order.

Tests assert against what AWS would have been sent, not against what the client believes
it sent: the record is taken where moto dispatches a request to its backend
(``BaseResponse.call_action``), which in-process ``mock_aws`` and the threaded server (the
sandbox) share. S3 has its own dispatch in moto (``S3Response``), so S3 calls are recorded
there, each named as S3's API reference names it (from the method and sub-resource). In
the sandbox, ``GET /_peagle/requests`` returns the record and ``DELETE /_peagle/requests``
clears it, for tests that drive the CLI in a subprocess.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from moto.core.responses import BaseResponse
from moto.s3.responses import S3Response

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


@lru_cache(maxsize=16)
def _rest_model(service: str) -> Any:
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    return model if model.protocol == "rest-json" else None


def _uri_members(response: BaseResponse, operation: str) -> dict[str, Any]:
    """A rest-json request's members that travel in its URI path and query string (EventBridge
    Scheduler's `GetSchedule` names its schedule only in `/schedules/{Name}`), by their
    member names in botocore's model, so the record says what was asked for."""
    model = _rest_model(str(getattr(response, "service_name", "") or ""))
    if model is None or operation not in model.operation_names:
        return {}
    op = model.operation_model(operation)
    template = op.http["requestUri"].split("?")[0]
    pattern = re.sub(r"\\{(\w+)(?:\\\+)?\\}", r"(?P<\1>[^?]+?)", re.escape(template))
    path = urlparse(str(getattr(response, "path", "") or "")).path
    found = re.fullmatch(pattern, path)
    by_location = {
        (m.serialization.get("location"), m.serialization.get("name", name)): name
        for name, m in op.input_shape.members.items()
    } if op.input_shape else {}  # fmt: skip
    out: dict[str, Any] = {}
    for location, value in (found.groupdict() if found else {}).items():
        if ("uri", location) in by_location:
            out[by_location[("uri", location)]] = unquote(value)
    query = getattr(response, "querystring", None) or {}
    for location, values in query.items():
        if ("querystring", location) in by_location:
            out[by_location[("querystring", location)]] = values[0] if len(values) == 1 else values
    return out


def _flat(query: dict[str, list[str]]) -> dict[str, Any]:
    return {k: v[0] if len(v) == 1 else v for k, v in query.items()}


def s3_operation(method: str, has_key: bool, query: dict[str, Any], headers: Any) -> str:
    """The S3 API operation a REST request is (the common ones peagle sends; anything else
    is named by its method and sub-resource, so it is still recorded and still visible)."""
    if not has_key:
        if method == "HEAD":
            return "HeadBucket"
        if method == "GET":
            if "list-type" in query:
                return "ListObjectsV2"
            if "location" in query:
                return "GetBucketLocation"
            if "uploads" in query:
                return "ListMultipartUploads"
            return "ListObjects" if not query else f"GetBucket?{','.join(sorted(query))}"
        if method == "PUT":
            return "CreateBucket" if not query else f"PutBucket?{','.join(sorted(query))}"
        if method == "POST" and "delete" in query:
            return "DeleteObjects"
        if method == "DELETE":
            return "DeleteBucket" if not query else f"DeleteBucket?{','.join(sorted(query))}"
        return f"{method} bucket"
    if method == "GET":
        return "ListParts" if "uploadId" in query else "GetObject"
    if method == "HEAD":
        return "HeadObject"
    if method == "PUT":
        if "partNumber" in query:
            return "UploadPartCopy" if "x-amz-copy-source" in headers else "UploadPart"
        return "CopyObject" if "x-amz-copy-source" in headers else "PutObject"
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in query else "DeleteObject"
    return f"{method} object"


def request_log_patches(log: Callable[[], RequestLog]) -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement): record each request, then dispatch it as moto does."""
    original = BaseResponse.call_action
    bucket_original = S3Response._bucket_response
    key_original = S3Response._key_response

    def s3(self: S3Response, request: Any, full_url: str, has_key: bool) -> None:
        try:
            query = _flat(parse_qs(urlparse(full_url).query, keep_blank_values=True))
            params: dict[str, Any] = {}
            bucket = self.parse_bucket_name_from_url(request, full_url)
            if bucket:
                params["Bucket"] = bucket
            if has_key:
                params["Key"] = self.parse_key_name()
            if request.headers.get("range"):
                params["Range"] = request.headers["range"]
            params.update({k: v for k, v in query.items() if v != "" or k not in params})
            operation = (
                s3_operation(request.method, has_key, query, request.headers)
                if bucket
                else "ListBuckets"
            )
            log().record(RecordedRequest("s3", operation, params, time.time()))
        except Exception:  # recording must never change what moto answers
            return

    def bucket_response(self: S3Response, request: Any, full_url: str) -> Any:
        s3(self, request, full_url, has_key=False)
        return bucket_original(self, request, full_url)

    def key_response(self: S3Response, request: Any, full_url: str) -> Any:
        s3(self, request, full_url, has_key=True)
        return key_original(self, request, full_url)

    def call_action(self: BaseResponse) -> Any:
        try:
            operation = self._get_action()
            params = _params(self)
            uri = _uri_members(self, str(operation or ""))
            if uri:  # the URI's members by name, instead of their raw query spelling
                params = {
                    **{k: v for k, v in params.items() if k not in self.querystring},
                    **uri,
                }
            item = RecordedRequest(
                service=str(getattr(self, "service_name", "") or ""),
                operation=str(operation or ""),
                params=params,
                time=time.time(),
            )
        except Exception:  # recording must never change what moto answers
            item = None
        if item is not None and item.operation:
            log().record(item)
        return original(self)

    return [
        (BaseResponse, "call_action", call_action),
        (S3Response, "_bucket_response", bucket_response),
        (S3Response, "_key_response", key_response),
    ]
