"""Traffic as SDK calls: `invoke` (one prompt) and `chat` (a session with history), the
methods of `TrafficOps`, a mixin of `sm_peagle.Client`. Both check every argument before
anything is sent and hand text to callbacks as it arrives (`on_text`, `on_reasoning`),
never printing.

    c = sm_peagle.Client().invoke("my-endpoint", "Hello", max_tokens=64, on_text=print)
    c.output_tokens, c.ttft
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import plugins, settings
from ..errors import Call, NotFound, Param, PeagleError, SpecError, text
from .measure_checks import (
    EndpointHandle,
    check_max_tokens,
    check_prompt,
    check_temperature,
    check_top_p,
)
from .measure_traffic_results import ChatTranscript, InvokeResult
from .session import Session, check_endpoint_name

if TYPE_CHECKING:
    from ..runtime.chunks import Completion
    from ..runtime.client import RuntimeClient

__all__ = ["ChatSession", "TrafficOps", "require_endpoint"]

OnText = Callable[[str], None]


def _invoke_usage() -> Any:
    return Call("invoke", "NAME", "Hi")


def _sampling(max_tokens: Any, temperature: Any, top_p: Any) -> dict[str, Any]:
    """max_tokens, and temperature and top_p when given, checked as vLLM checks them."""
    params: dict[str, Any] = {"max_tokens": check_max_tokens(max_tokens)}
    if check_temperature(temperature) is not None:
        params["temperature"] = temperature
    if check_top_p(top_p) is not None:
        params["top_p"] = top_p
    return params


def _request(
    prompt: str | None, raw: str | Path | dict | None, *, system: str | None,
    max_tokens: Any, temperature: Any, top_p: Any = None,
) -> dict[str, Any]:  # fmt: skip
    """The keyword arguments of one runtime call, validated."""
    if raw is not None:
        if prompt is not None or system is not None:
            raise SpecError(
                text("pass either a prompt or {raw}, not both"), field="raw", value=str(raw),
                rule="a prompt or raw, not both",
                remedy=text("put the messages in the {raw} JSON body, or drop {raw}"),
            )  # fmt: skip
        for key, value in (("temperature", temperature), ("top_p", top_p)):
            if value is not None:  # the body goes as is: a keyword beside it would be ignored
                raise SpecError(
                    text("{p} applies to a prompt; with {raw}, the body says it", p=Param(key)),
                    field=key, value=value, rule="not with raw",
                    remedy=text('put "{key}" in the {raw} JSON body', key=key),
                )  # fmt: skip
        if isinstance(raw, dict):
            return {"payload": dict(raw)}
        try:
            payload = json.loads(Path(raw).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SpecError(
                text("cannot read {p}: {e}", p=Param("raw", str(raw)), e=e), field="raw",
                value=str(raw), rule="a file holding one JSON object",
                remedy="give a file holding one JSON object",
            ) from None  # fmt: skip
        if not isinstance(payload, dict):
            raise SpecError(
                text("{p} must hold a JSON object", p=Param("raw", str(raw))), field="raw",
                value=str(raw), rule="a file holding one JSON object",
                remedy='e.g. {"messages": [{"role": "user", "content": "Hi"}]}',
            )  # fmt: skip
        return {"payload": payload}
    check_prompt(prompt, usage=_invoke_usage())
    return {"messages": prompt, "system": system,
            **_sampling(max_tokens, temperature, top_p)}  # fmt: skip


def _send(
    rt: RuntimeClient, *, stream: bool, on_text: OnText | None, on_reasoning: OnText | None,
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


def require_endpoint(aws: Any, name: str, *, serving: bool = False) -> None:
    """NotFound (one line naming `name`) when SageMaker says there is no such endpoint;
    with `serving`, also PeagleError when it cannot answer yet (Creating, Failed, ...), as
    `bench` refuses it. Anything less certain (no DescribeEndpoint permission, no control
    plane here) leaves it to the first message."""
    from botocore.exceptions import ClientError

    from ..benchmarking.runner import SERVING

    if settings.runtime_only_redirected():
        return  # only the runtime API is redirected (a local server): nothing to describe
    try:
        desc = aws.client("sagemaker").describe_endpoint(EndpointName=name)
    except ClientError as e:
        if "Could not find" in str(e):
            raise NotFound(
                f"endpoint {name} does not exist", remedy=text("see `{ls}`", ls=Call("ls"))
            ) from None
        return
    status = desc.get("EndpointStatus")
    if serving and status not in SERVING:
        raise PeagleError(
            f"endpoint {name} is {status}, not InService",
            remedy=text("wait: `{status}`", status=Call("status", name)),
        )


@dataclass
class ChatSession:
    """A chat with history: `send(text)` adds the turn and the answer; a failed turn is
    left out of the history, so it can be retried.

    Attributes:
        runtime: The runtime client the turns are sent with.
        params: The sampling parameters of every turn (max_tokens, temperature, top_p).
        stream: Whether each answer is streamed.
        history: The conversation so far (the system message, then user and assistant
            messages), as the chat completions API takes it.
        endpoint: The endpoint's name as it was given.
        component: The inference component talked to, or None.
        turns: Each answered turn's InvokeResult, in order.
    """

    runtime: RuntimeClient
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = True
    history: list[dict[str, str]] = field(default_factory=list)
    endpoint: str = ""  # as named, for the transcript
    component: str | None = None
    turns: list[InvokeResult] = field(default_factory=list)  # each answered turn

    def transcript(self) -> ChatTranscript:
        """The chat so far: messages and each answered turn (`peagle chat --json`)."""
        return ChatTranscript(self.endpoint or self.runtime.endpoint_name, self.component,
                              tuple(self.history), tuple(self.turns))  # fmt: skip

    def send(
        self, text: str, *, on_text: OnText | None = None, on_reasoning: OnText | None = None
    ) -> InvokeResult:
        """Send one user message with the conversation so far; the reply is added to the history and
        returned as an InvokeResult. SpecError for an empty message."""
        check_prompt(text, usage="type a message")
        turn = [*self.history, {"role": "user", "content": text}]
        completion = _send(self.runtime, stream=self.stream, on_text=on_text,
                           on_reasoning=on_reasoning, messages=turn, **self.params)  # fmt: skip
        self.history = [*turn, {"role": "assistant", "content": completion.text}]
        self.turns.append(InvokeResult.of(completion))
        return self.turns[-1]


class TrafficOps(Session):
    """Talking to endpoints: `invoke` and `chat` (a mixin of `sm_peagle.Client`)."""

    def _runtime(self, name: str, component: str | None) -> RuntimeClient:
        """The runtime client for `name`, credentials checked and its inference
        `component` (required on an endpoint that hosts components) checked before any
        traffic."""
        from ..lifecycle.component_targets import resolve_component
        from ..runtime.client import RuntimeClient

        check_endpoint_name(name, field="endpoint")
        ctx = self._connect()
        # The control-plane line says where SageMaker calls go; invoke talks to the runtime
        # API, which has its own override, so say so when it is set.
        runtime_url = settings.runtime_redirected()
        if runtime_url and plugins.current_target() is None:  # the target's line says it
            self._say(f"runtime: custom endpoint {runtime_url}")
        ic = resolve_component(ctx.client("sagemaker"), name, component)
        return RuntimeClient(ctx, name, inference_component=ic)

    def invoke(
        self,
        endpoint: str | EndpointHandle,
        prompt: str | None = None,
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float | None = None,
        top_p: float | None = None,
        stream: bool = True,
        raw: str | Path | dict | None = None,
        component: str | None = None,
        on_text: OnText | None = None,
        on_reasoning: OnText | None = None,
    ) -> InvokeResult:
        """Send one prompt (or a `raw` JSON body) and return its answer (text, usage, TTFT,
        tokens/s). Nothing is sent on a bad argument.

        Args:
            endpoint: the endpoint's name, or an `Endpoint` handle.
            prompt: the user message (not with `raw`).
            system: a system message before it.
            max_tokens: max_tokens, at least 1 (vLLM's rule).
            temperature: sampling temperature, 0 (greedy) to 2; None: the model's default.
            top_p: nucleus sampling, in (0, 1]; None: the model's default.
            stream: stream the answer (text reaches `on_text` as it arrives).
            raw: a request body sent as is: a dict, or a file holding one JSON object.
            component: the inference component to send to, where the endpoint hosts
                several (its short name is enough).
            on_text: called with the answer's text as it arrives (once, whole, without
                `stream`).
            on_reasoning: called with the reasoning text as it arrives.

        Returns:
            InvokeResult: the text, usage, TTFT and tokens/s; `to_dict()` is the
            `peagle invoke --json` document.

        Raises:
            SpecError: a bad argument (an empty prompt, both a prompt and `raw`, ...).
            NotFound: no such endpoint or component.
            ModelInvocationError: the container answered with an error.
        """
        request = _request(prompt, raw, system=system, max_tokens=max_tokens,
                           temperature=temperature, top_p=top_p)  # fmt: skip
        if isinstance(endpoint, str):
            rt = self._runtime(endpoint, component)
        else:
            rt = endpoint.runtime(component=component)
        completion = _send(rt, stream=stream, on_text=on_text, on_reasoning=on_reasoning, **request)
        return InvokeResult.of(completion)

    def chat(
        self,
        endpoint: str,
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float | None = None,
        top_p: float | None = None,
        stream: bool = True,
        component: str | None = None,
    ) -> ChatSession:
        """Open a chat with `endpoint`: the arguments and the endpoint are checked first,
        then `session.send(text)` per turn.

        Args:
            endpoint: the endpoint's name.
            system: a system message opening the history.
            max_tokens: max_tokens per answer, at least 1.
            temperature: sampling temperature, 0 (greedy) to 2; None: the model's default.
            top_p: nucleus sampling, in (0, 1]; None: the model's default.
            stream: stream each answer.
            component: the inference component to talk to, where the endpoint hosts several.

        Returns:
            ChatSession: `send(text)` per turn (an InvokeResult each); `history` holds the
            conversation, `transcript()` the chat so far (`peagle chat --json`).

        Raises:
            SpecError: a bad argument.
            NotFound: no such endpoint or component.
        """
        params = _sampling(max_tokens, temperature, top_p)
        rt = self._runtime(endpoint, component)
        require_endpoint(rt.aws, rt.endpoint_name)  # `chat nope` must not wait for input
        history = [{"role": "system", "content": system}] if system else []
        return ChatSession(rt, params, stream, history, endpoint=endpoint, component=component)
