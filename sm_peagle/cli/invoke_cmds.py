"""`peagle invoke` and `peagle chat`: talk to a deployed endpoint.

Answer text goes to stdout (live, as it streams); the target line, the stats line, the
acceptance line and reasoning text go to stderr, so `peagle invoke … > answer.txt` captures
only the answer. The acceptance line is vLLM's own count for this one request
(`metrics.speculative_decoding`, on images whose vLLM reports it; `--json`: `spec_decode`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .options import MaxTokensOpt, TemperatureOpt, component_option
from .output import current, note
from .spec_options import JsonOpt, RegionOpt

NameArg = Annotated[str, typer.Argument(help="Endpoint name.")]
SystemOpt = Annotated[str | None, typer.Option("--system", help="System prompt.")]
TopPOpt = Annotated[
    float | None,
    typer.Option("--top-p", help="Nucleus sampling: above 0, at most 1 (model default)."),
]
ComponentOpt = component_option(
    "Inference component to invoke (InferenceComponentName; the short name it was deployed "
    "with is enough). Required on an endpoint that hosts components."
)
StreamOpt = Annotated[
    bool,
    typer.Option("--stream/--no-stream", help="Stream tokens (InvokeEndpointWithResponseStream)."),
]


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


def acceptance_note(c: Any) -> str | None:
    """`acceptance: 3.2 tokens/step (73% of drafts), per request`, from vLLM's own count for
    this request; None when the engine did not report it (baseline, an older image)."""
    if not c.spec_decode:
        return None
    if c.acceptance_length is None:
        return "acceptance: no verify steps (nothing was drafted), per request"
    rate = c.draft_acceptance_rate
    share = f" ({rate:.0%} of drafts)" if rate is not None else ""
    return f"acceptance: {c.acceptance_length:.1f} tokens/step{share}, per request"


class _Live:
    """Callbacks that write the answer to stdout as it arrives (reasoning to stderr), and
    end a partial answer's line before an error line."""

    def __init__(self, stream: bool) -> None:
        self.stream = stream
        self.wrote = False

    def text(self, text: str) -> None:
        self.wrote = True
        sys.stdout.write(text if self.stream else text + "\n")
        sys.stdout.flush()

    def reasoning(self, text: str) -> None:
        if not self.stream:
            note(text)
            return
        sys.stderr.write(text)
        sys.stderr.flush()

    def run(self, send: Any) -> Any:
        try:
            completion = send(on_text=self.text, on_reasoning=self.reasoning)
        except Exception:
            if self.stream and self.wrote:
                sys.stdout.write("\n")
                sys.stdout.flush()
            raise
        if self.stream:
            sys.stdout.write("\n")
            sys.stdout.flush()
        return completion


def _send(send: Any) -> Any:
    """--json: the answer is in the document, so nothing is shown while it arrives."""
    return send()


def _render_stats(completion: Any) -> None:
    """The answer is already on stdout; the stats and acceptance lines go to stderr. Away
    from AWS each starts with the label (`[SANDBOX (SIMULATED)] TTFT …`, as `logs` marks its
    lines): a timing the sandbox made up must not read as a measurement."""
    from .. import settings

    label = current().label
    prefix = "" if label == settings.AWS else f"[{label}] "
    note(prefix + stats_line(completion))
    accepted = acceptance_note(completion)
    if accepted:
        note(prefix + accepted)


def _live_turn(session: Any, text: str, stream: bool) -> Any:
    return _Live(stream).run(lambda **cb: session.send(text, **cb))


def _json_turn(session: Any, text: str, stream: bool) -> Any:
    """--json: stdout keeps the one document, so each answer goes to stderr."""
    completion = session.send(text)
    note(completion.text)
    return completion


def _render_transcript(session: Any) -> None:
    """Nothing more: each answer and its stats line were shown as they came."""


def invoke_command(
    name: NameArg,
    prompt: Annotated[str | None, typer.Argument(help="User message.")] = None,
    system: SystemOpt = None,
    max_tokens: MaxTokensOpt = 512,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
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
    from functools import partial

    from .bench_cmds import measure_client

    send = partial(
        measure_client(region).invoke, name, prompt, system=system, max_tokens=max_tokens,
        temperature=temperature, top_p=top_p, stream=stream, raw=raw, component=component,
    )  # fmt: skip
    completion = current().human(_Live(stream).run, otherwise=_send)(send)
    current().result(completion, render=_render_stats)


def chat_command(
    name: NameArg,
    system: SystemOpt = None,
    max_tokens: MaxTokensOpt = 512,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
    stream: StreamOpt = True,
    region: RegionOpt = None,
    component: ComponentOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Multi-turn chat with history. One line per message; /exit or end of input quits.
    With --json, stdout gets one document at the end: the transcript (messages) and each
    turn's stats; answers are shown on stderr meanwhile."""
    from ..errors import PeagleError
    from .bench_cmds import measure_client

    session = measure_client(region).chat(
        name, system=system, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
        stream=stream, component=component,
    )  # fmt: skip
    interactive = sys.stdin.isatty()
    turn = current().human(_live_turn, otherwise=_json_turn)
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
        try:
            completion = turn(session, text, stream)
        except PeagleError as e:
            if not interactive:  # scripted input: fail like any other command
                raise
            # A person can retry; the failed turn is left out of the history.
            note(f"error: {e.one_line()}")
            continue
        _render_stats(completion)
    current().result(session.transcript(), render=_render_transcript)
