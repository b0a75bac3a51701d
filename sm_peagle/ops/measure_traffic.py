"""Traffic as SDK calls: `invoke` (one prompt, `peagle invoke`) and `chat` (a session
with history, `peagle chat`). Both check every argument before anything is sent and hand
text to callbacks as it arrives (`on_text`, `on_reasoning`), never printing.

    c = sm_peagle.invoke("my-endpoint", "Hello", max_tokens=64, on_text=print)
    c.output_tokens, c.ttft
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import settings
from ..errors import NotFound, SpecError
from .measure_checks import (
    check_max_tokens,
    check_prompt,
    check_temperature,
)
from .session import OnConnect, check_endpoint_name, context, quiet

if TYPE_CHECKING:
    from ..endpoint import Endpoint
    from ..runtime.chunks import Completion
    from ..runtime.client import RuntimeClient

__all__ = ["ChatSession", "chat", "invoke"]

Text = Callable[[str], None]
INVOKE_USAGE = 'peagle invoke NAME "Hi"'


def _open_runtime(
    name: str,
    *,
    component: str | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Text | None = None,
    on_connect: OnConnect | None = None,
) -> RuntimeClient:
    """The runtime client for `name`, credentials checked and its inference `component`
    (required on an endpoint that hosts components) checked before any traffic."""
    from ..lifecycle.component_targets import resolve_component
    from ..runtime.client import RuntimeClient

    say = say or quiet
    check_endpoint_name(name)
    ctx = context(region, aws, on_connect)
    # The control-plane line says where SageMaker calls go; invoke talks to the runtime
    # API, which has its own override, so say so when it is set.
    runtime_url = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME")
    if runtime_url and not settings.sandbox_url():  # the sandbox line says it
        say(f"runtime: custom endpoint {runtime_url}")
    ic = resolve_component(ctx.client("sagemaker"), name, component)
    return RuntimeClient(ctx, name, inference_component=ic)


def _request(
    prompt: str | None, raw: str | Path | dict | None, *, system: str | None,
    max_tokens: Any, temperature: Any,
) -> dict[str, Any]:  # fmt: skip
    """The keyword arguments of one runtime call, validated."""
    if raw is not None:
        if prompt is not None or system is not None:
            raise SpecError("pass either a prompt or --raw, not both")
        if isinstance(raw, dict):
            return {"payload": dict(raw)}
        try:
            payload = json.loads(Path(raw).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SpecError(f"cannot read --raw {raw}: {e}") from None
        if not isinstance(payload, dict):
            raise SpecError(f"--raw {raw} must hold a JSON object")
        return {"payload": payload}
    check_prompt(prompt, usage=INVOKE_USAGE)
    request: dict[str, Any] = {"messages": prompt, "system": system,
                               "max_tokens": check_max_tokens(max_tokens)}  # fmt: skip
    if check_temperature(temperature) is not None:
        request["temperature"] = temperature
    return request


def _send(
    rt: RuntimeClient, *, stream: bool, on_text: Text | None, on_reasoning: Text | None,
    **request: Any,
) -> Completion:  # fmt: skip
    """One request; text and reasoning go to the callbacks as they arrive (whole, once,
    without streaming)."""
    if not stream:
        completion = rt.invoke(**request)
        if on_reasoning is not None and completion.reasoning:
            on_reasoning(completion.reasoning)
        if on_text is not None:
            on_text(completion.text)
        return completion
    result = rt.stream(**request)
    for chunk in result:
        if on_reasoning is not None and chunk.reasoning:
            on_reasoning(chunk.reasoning)
        if on_text is not None and chunk.text:
            on_text(chunk.text)
    return result.completion()


def invoke(
    endpoint: str | Endpoint,
    prompt: str | None = None,
    *,
    system: str | None = None,
    max_tokens: int = 512,
    temperature: float | None = None,
    stream: bool = True,
    raw: str | Path | dict | None = None,
    component: str | None = None,
    region: str | None = None,
    aws: Any = None,
    on_text: Text | None = None,
    on_reasoning: Text | None = None,
    say: Text | None = None,
    on_connect: OnConnect | None = None,
) -> Completion:
    """Send one prompt (or a `raw` JSON body: a dict or a file) and return the Completion
    (text, usage, TTFT, tokens/s). `max_tokens` >= 1 and `temperature` >= 0, as vLLM's
    sampling parameters require; an empty prompt is refused. Nothing is sent on a bad
    argument. With `stream` text reaches `on_text` as it arrives."""
    request = _request(prompt, raw, system=system, max_tokens=max_tokens, temperature=temperature)
    if isinstance(endpoint, str):
        rt = _open_runtime(endpoint, component=component, region=region, aws=aws, say=say,
                           on_connect=on_connect)  # fmt: skip
    else:
        rt = endpoint.runtime(component=component)
    return _send(rt, stream=stream, on_text=on_text, on_reasoning=on_reasoning, **request)


def _require_endpoint(rt: RuntimeClient) -> None:
    """NotFound when SageMaker says there is no such endpoint. Anything less certain (no
    DescribeEndpoint permission, no control plane here) leaves it to the first message."""
    from botocore.exceptions import ClientError

    env = os.environ
    if env.get("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME") and not (
        env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT_URL_SAGEMAKER")
    ):
        return  # only the runtime API is redirected (a local server): nothing to describe
    try:
        rt.aws.client("sagemaker").describe_endpoint(EndpointName=rt.endpoint_name)
    except ClientError as e:
        if "Could not find" in str(e):
            name = rt.endpoint_name
            raise NotFound(f"endpoint {name} does not exist", remedy="see `peagle ls`") from None


@dataclass
class ChatSession:
    """A chat with history: `send(text)` adds the turn and the answer; a failed turn is
    left out of the history, so it can be retried."""

    runtime: RuntimeClient
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = True
    history: list[dict[str, str]] = field(default_factory=list)

    def send(
        self, text: str, *, on_text: Text | None = None, on_reasoning: Text | None = None
    ) -> Completion:
        check_prompt(text, usage="type a message")
        turn = [*self.history, {"role": "user", "content": text}]
        completion = _send(self.runtime, stream=self.stream, on_text=on_text,
                           on_reasoning=on_reasoning, messages=turn, **self.params)  # fmt: skip
        self.history = [*turn, {"role": "assistant", "content": completion.text}]
        return completion


def chat(
    endpoint: str,
    *,
    system: str | None = None,
    max_tokens: int = 512,
    temperature: float | None = None,
    stream: bool = True,
    component: str | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Text | None = None,
    on_connect: OnConnect | None = None,
) -> ChatSession:
    """Open a chat with `endpoint` (`peagle chat`): arguments and the endpoint are checked
    first (NotFound for a missing one), then `session.send(text)` per turn."""
    params: dict[str, Any] = {"max_tokens": check_max_tokens(max_tokens)}
    if check_temperature(temperature) is not None:
        params["temperature"] = temperature
    rt = _open_runtime(endpoint, component=component, region=region, aws=aws, say=say,
                       on_connect=on_connect)  # fmt: skip
    _require_endpoint(rt)  # `chat nope` must not wait for input, then exit 0
    history = [{"role": "system", "content": system}] if system else []
    return ChatSession(rt, params, stream, history)
