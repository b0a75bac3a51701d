"""SageMaker-shaped HTTP answers: JSON bodies, AWS errors, and the ModelError wrapper.

SageMaker runtime is a rest-json service: botocore reads the error code from the
``x-amzn-ErrorType`` header and the message (and ModelError's extra members) from the body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from peagle_sandbox.backend import EndpointView

__all__ = ["after_send", "aws_error", "json_response", "model_error"]

_STATUS = {
    200: "200 OK",
    400: "400 Bad Request",
    404: "404 Not Found",
    405: "405 Method Not Allowed",
    424: "424 Failed Dependency",
}


def after_send(body: list[bytes], then: Callable[[], Any]) -> Iterator[bytes]:
    yield from body
    then()  # runs once the server asks for more, i.e. after the bytes were written


def json_response(
    start_response: Callable, status: int, body: Any, content_type: str = "application/json"
) -> list[bytes]:
    data = json.dumps(body, default=str).encode()
    start_response(
        _STATUS.get(status, f"{status} Error"),
        [("Content-Type", content_type), ("Content-Length", str(len(data)))],
    )
    return [data]


def aws_error(
    start_response: Callable,
    status: int,
    code: str,
    body: dict[str, Any],
    headers: list[tuple[str, str]],
) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(
        _STATUS.get(status, f"{status} Error"),
        [
            *headers,
            ("x-amzn-ErrorType", f"{code}:http://internal.amazon.com/coral/com.amazon.sagemaker/"),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(data))),
        ],
    )
    return [data]


def model_error(
    start_response: Callable,
    view: EndpointView,
    account: str,
    original_status: int,
    original_message: str,
    headers: list[tuple[str, str]],
) -> list[bytes]:
    """SageMaker's wrapper for a container's non-200 answer."""
    group = f"/aws/sagemaker/Endpoints/{view.name}"
    kind = "client" if 400 <= original_status < 500 else "server"
    message = (
        f'Received {kind} error ({original_status}) from primary with message "'
        f'{original_message}". See https://{view.region}.console.aws.amazon.com/cloudwatch/home'
        f"?region={view.region}#logEventViewer:group={group} in account {account} for more "
        "information."
    )
    body = {
        "ErrorCode": f"{kind.upper()}_ERROR_FROM_MODEL",
        "LogStreamArn": f"arn:aws:logs:{view.region}:{account}:log-group:{group}",
        "Message": message,
        "OriginalMessage": original_message,
        "OriginalStatusCode": original_status,
    }
    return aws_error(start_response, 424, "ModelError", body, headers)
