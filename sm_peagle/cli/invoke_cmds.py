"""`peagle invoke` and `peagle chat`: talk to a deployed endpoint.

Answer text goes to stdout (live, as it streams); the target line, the stats line and
reasoning text go to stderr, so `peagle invoke … > answer.txt` captures only the answer.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import note, print_json
from .spec_options import JsonOpt, RegionOpt

NameArg = Annotated[str, typer.Argument(help="Endpoint name.")]
SystemOpt = Annotated[str | None, typer.Option("--system", help="System prompt.")]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", help="Most tokens to generate.")]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature (model default).")
]
ComponentOpt = Annotated[
    str | None,
    typer.Option(
        "--component",
        help="Inference component to invoke (InferenceComponentName; the short name it was "
        "deployed with is enough). Required on an endpoint that hosts components.",
    ),
]
StreamOpt = Annotated[
    bool,
    typer.Option("--stream/--no-stream", help="Stream tokens (InvokeEndpointWithResponseStream)."),
]


def _runtime(name: str, region: str | None, component: str | None = None) -> Any:
    """The runtime client for `name` (and its inference component: checked against the
    endpoint's components first, a one-line error before any traffic)."""
    from ..aws import AwsContext
    from ..lifecycle.component_targets import resolve_component
    from ..runtime.client import RuntimeClient
    from .context import describe_target

    aws = AwsContext(region)
    aws.check_credentials()
    note(describe_target(aws))
    # describe_target looks at the control-plane endpoint; invoke talks to the runtime
    # API, which has its own override, so say so when it is set.
    runtime_url = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME")
    if runtime_url and not os.environ.get("PEAGLE_SANDBOX_URL"):  # the sandbox line says it
        note(f"runtime: custom endpoint {runtime_url}")
    component = resolve_component(aws.client("sagemaker"), name, component)
    return RuntimeClient(aws, name, inference_component=component)


def _require_endpoint(aws: Any, name: str) -> None:
    """NotFound (exit 1) when SageMaker says there is no such endpoint. Anything less
    certain (no DescribeEndpoint permission, no control plane here) leaves it to the
    first message."""
    from botocore.exceptions import ClientError

    from ..errors import NotFound

    env = os.environ
    if env.get("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME") and not (
        env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT_URL_SAGEMAKER")
    ):
        return  # only the runtime API is redirected (a local server): nothing to describe
    try:
        aws.client("sagemaker").describe_endpoint(EndpointName=name)
    except ClientError as e:
        if "Could not find" in str(e):
            raise NotFound(f"endpoint {name} does not exist", remedy="see `peagle ls`") from None


def stats_line(c: Any) -> str:
    """`TTFT 0.41s · 128 output tokens · 312.5 tok/s · 3.12 tokens/chunk`: token counts
    from vLLM's usage, never from chunks or characters."""
    parts = [f"TTFT {c.ttft:.2f}s" if c.ttft is not None else f"e2e {c.e2e:.2f}s"]
    parts.append(
        f"{c.output_tokens} output tokens" if c.output_tokens is not None else "no usage reported"
    )
    if c.output_tokens_per_s is not None:
        parts.append(f"{c.output_tokens_per_s:.1f} tok/s")
    if c.mean_tokens_per_chunk is not None:
        parts.append(f"{c.mean_tokens_per_chunk:.2f} tokens/chunk")
    if c.finish_reason not in (None, "stop"):
        parts.append(f"finish: {c.finish_reason}")
    return " · ".join(parts)


JSON_KEYS = (
    "text",
    "finish_reason",
    "usage",
    "ttft_s",
    "e2e_s",
    "output_tokens_per_s",
    "mean_tokens_per_chunk",
    "tpot_s",
)


def _json_doc(c: Any) -> dict[str, Any]:
    doc = c.to_dict()
    return {k: doc[k] for k in JSON_KEYS}


def _run(rt: Any, *, stream: bool, live: bool, **request: Any) -> Any:
    """One request; with `live`, text is written to stdout as it arrives."""
    if not stream:
        completion = rt.invoke(**request)
        if live:
            if completion.reasoning:
                note(completion.reasoning)
            sys.stdout.write(completion.text + "\n")
        return completion
    result = rt.stream(**request)
    try:
        for chunk in result:
            if live and chunk.reasoning:
                sys.stderr.write(chunk.reasoning)
                sys.stderr.flush()
            if live and chunk.text:
                sys.stdout.write(chunk.text)
                sys.stdout.flush()
    except Exception:
        if live and result.text:  # end the partial answer's line before the error line
            sys.stdout.write("\n")
            sys.stdout.flush()
        raise
    if live:
        sys.stdout.write("\n")
        sys.stdout.flush()
    return result.completion()


def _finish(completion: Any, json_out: bool) -> None:
    if json_out:
        print_json(_json_doc(completion))
    else:
        note(stats_line(completion))


def invoke_command(
    name: NameArg,
    prompt: Annotated[str | None, typer.Argument(help="User message.")] = None,
    system: SystemOpt = None,
    max_tokens: MaxTokensOpt = 512,
    temperature: TemperatureOpt = None,
    stream: StreamOpt = True,
    raw: Annotated[
        Path | None,
        typer.Option("--raw", help="Send this JSON request body as is (stream flags set)."),
    ] = None,
    region: RegionOpt = None,
    component: ComponentOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Send one prompt; stream the answer to stdout and a stats line to stderr."""
    from ..errors import SpecError

    if raw is not None:
        if prompt is not None or system is not None:
            raise SpecError("pass either a prompt or --raw, not both")
        try:
            payload = json.loads(raw.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SpecError(f"cannot read --raw {raw}: {e}") from None
        if not isinstance(payload, dict):
            raise SpecError(f"--raw {raw} must hold a JSON object")
        request: dict[str, Any] = {"payload": payload}
    elif prompt is None or not prompt.strip():
        what = "give a prompt" if prompt is None else "prompt: empty; give some text"
        raise SpecError(f"{what} (or --raw payload.json)", remedy='peagle invoke NAME "Hi"')
    else:
        request = {"messages": prompt, "system": system, "max_tokens": max_tokens}
        if temperature is not None:
            request["temperature"] = temperature
    rt = _runtime(name, region, component)
    completion = _run(rt, stream=stream, live=not json_out, **request)
    _finish(completion, json_out)


def chat_command(
    name: NameArg,
    system: SystemOpt = None,
    max_tokens: MaxTokensOpt = 512,
    temperature: TemperatureOpt = None,
    stream: StreamOpt = True,
    region: RegionOpt = None,
    component: ComponentOpt = None,
) -> None:
    """Multi-turn chat with history. One line per message; /exit or end of input quits."""
    from ..errors import PeagleError

    rt = _runtime(name, region, component)
    _require_endpoint(rt.aws, name)  # `chat nope` must not wait for input, then exit 0
    interactive = sys.stdin.isatty()
    history: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    params: dict[str, Any] = {"max_tokens": max_tokens}
    if temperature is not None:
        params["temperature"] = temperature
    if interactive:
        note("type a message; /exit or Ctrl-D to quit")
    while True:
        if interactive:
            sys.stderr.write("you> ")
            sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:  # end of input
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        turn = [*history, {"role": "user", "content": text}]
        try:
            completion = _run(rt, stream=stream, live=True, messages=turn, **params)
        except PeagleError as e:
            if not interactive:  # scripted input: fail like any other command
                raise
            # A person can retry; the failed turn is left out of the history.
            note(f"error: {e.one_line()}")
            continue
        history = [*turn, {"role": "assistant", "content": completion.text}]
        note(stats_line(completion))
