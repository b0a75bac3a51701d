"""Run the sandbox: ``python -m peagle_sandbox.server --port P [--upstream URL] ...``.

One process, one port on 127.0.0.1: moto's threaded server (every control-plane service moto
fakes: sagemaker, iam, s3, sts, logs, application-autoscaling, service-quotas, ...) with
peagle's SageMaker harness installed, and in front of it the simulated SageMaker runtime and
the ``/_peagle/`` routes (health, engine constants, ground truth). It must be one process:
the runtime and the log simulator read moto's backends directly.

One sandbox clock (`peagle_sandbox.sandbox_clock.SandboxClock`, `--clock-rate`, `--clock-frozen`)
is the time of everything the control plane emulates: the harness's Creating / Updating /
Deleting, every timestamp moto writes, the simulated logs, and the `Date` header of every
answer, moto's and the sandbox's own (`ClockRequestHandler`). `GET/POST /_peagle/clock`
reads and moves it (runtime.py).

On start it seeds the account (moto's 123456789012): the role ``peagle-sandbox-role`` and the
JumpStart prefixes (see ``seed``), then writes ``--state-file`` (pid, port, url, ...) once it
answers, and removes it on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import logging
import math
import os
import signal
import sys
import tempfile
import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

from peagle_sandbox import quotas
from peagle_sandbox.engine import CONSTANTS, constants_from_env
from peagle_sandbox.engine_harness import HOLD_SECONDS, EngineHarness
from peagle_sandbox.engine_host import EngineHost
from peagle_sandbox.groundtruth import GroundTruth
from peagle_sandbox.logsim import LogSimulator
from peagle_sandbox.runtime import Runtime
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.seed import seed_account
from peagle_sandbox.seed_tiny import seed_tiny_models
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from peagle_sandbox.trainer_host import TrainerHost, trainer_python

from . import settings

log = logging.getLogger("peagle.sandbox")
HOST = "127.0.0.1"  # never another interface: the sandbox has no authentication


class ClockRequestHandler(MotoRequestHandler):
    """moto's request handler with one `Date` header per answer, on the sandbox clock.

    http.server's `send_response` always adds `Date`, from the wall clock; moto behind a
    server sets none (`moto.core.responses` stamps its own only in-process), nor do the
    runtime and `/_peagle/` routes. Here `send_response` adds none, `end_headers` adds the
    clock's, and if an application ever sends its own `Date`, the first one wins: never two.
    """

    clock: SandboxClock  # set on the per-server subclass (`for_clock`)
    _dated = True

    @classmethod
    def for_clock(cls, clock: SandboxClock) -> type[ClockRequestHandler]:
        return type("ClockRequestHandler", (cls,), {"clock": clock})

    def date_time_string(self, timestamp: float | None = None) -> str:
        when = self.clock.now() if timestamp is None else timestamp
        return email.utils.formatdate(when, usegmt=True)

    def send_response(self, code: int, message: str | None = None) -> None:
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Server", self.version_string())
        self._dated = False  # per answer: a keep-alive connection reuses the handler

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "date":
            if self._dated:
                return
            self._dated = True
        super().send_header(keyword, value)

    def end_headers(self) -> None:
        if not self._dated:
            self.send_header("Date", self.date_time_string())
        super().end_headers()


class SandboxServer(ThreadedMotoServer):
    """moto's ThreadedMotoServer with the runtime mounted in front of its WSGI app."""

    def __init__(self, runtime: Runtime, port: int) -> None:
        super().__init__(ip_address=HOST, port=port, verbose=False)
        self._runtime = runtime
        self.error: BaseException | None = None

    def _server_entry(self) -> None:
        try:
            app = self._runtime.wrap(DomainDispatcherApplication(create_backend_app))
            handler = ClockRequestHandler.for_clock(self._runtime.harness.clock)
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=handler
            )
        except BaseException as e:  # e.g. port in use: start() would otherwise wait forever
            self.error = e
            self._server_ready_event.set()
            return
        self._server_ready_event.set()
        self._server.serve_forever()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m peagle_sandbox.server", description=__doc__)
    p.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = any free)")
    p.add_argument("--upstream", help="OpenAI-compatible server to forward invocations to")
    p.add_argument("--state-file", type=Path, help="write pid/port/url here once ready")
    p.add_argument("--log-file", help="where stdout/stderr go (recorded in the state file)")
    p.add_argument(
        "--clock-rate",
        type=_positive,
        default=1.0,
        help="sandbox seconds per real second of the control plane's clock (1.0)",
    )
    p.add_argument("--clock-frozen", action="store_true", help="start with the clock frozen")
    p.add_argument("--creating-seconds", type=float, default=3.0, help="sandbox seconds")
    p.add_argument("--updating-seconds", type=float, default=3.0, help="sandbox seconds")
    p.add_argument(
        "--deleting-seconds",
        type=_non_negative,
        default=0.0,
        help="sandbox seconds an endpoint stays Deleting (0: gone at once)",
    )
    p.add_argument(
        "--metrics-interval", type=float, default=10.0, help="sandbox seconds between stats"
    )
    p.add_argument(
        "--step-time-factor",
        type=_positive,
        default=CONSTANTS.step_time_factor,
        help="multiply the SIMULATED engine's step times (larger is slower; real seconds)",
    )
    # The old spelling, for one release (a manager from before the rename passes it).
    p.add_argument("--time-scale", type=_positive, dest="step_time_factor", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help="seed of the PayloadPart splits")
    p.add_argument("--region", action="append", default=[], help="extra region to seed")
    p.add_argument(
        "--instance-types",
        action="append",
        default=[],
        metavar="REGION=TYPE[,TYPE]",
        help="instance types a region offers (default: all); also "
        f"{quotas.INSTANCE_TYPES_ENV}='R1=T1,T2;R2=T3'",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log every HTTP request")
    p.add_argument("--engine", choices=("simulated", "vllm"), default="simulated")
    p.add_argument("--engine-home", type=Path, help="real engine's home (install-engine)")
    p.add_argument("--vllm-version", help="real engine's vLLM version")
    p.add_argument(
        "--trainer",
        action="store_true",
        help="run training jobs' entrypoints in the trainer venv (install-trainer) of "
        "PEAGLE_TRAINER_HOME, else of the engine home; without it (nor --trainer-home, nor "
        "PEAGLE_TRAINER_HOME), training jobs use the SIMULATED trainer",
    )
    p.add_argument("--trainer-home", type=Path, help="the trainer venv's home (implies --trainer)")
    return p.parse_args(argv)


def _positive(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number (got {text})")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0 (got {text})")
    return value


def _write_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)  # atomic: readers never see half a file


def _remove_state(path: Path) -> None:
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def start_host(
    harness: EngineHarness,
    runtime: Runtime,
    url: str,
    home: Path | None,
    version: str | None,
    state_file: Path | None,
    stats_interval: float | None = None,
) -> EngineHost:
    """The real-engine host, hooked into the harness (create/update/delete) and the runtime
    (invocations); engines are recorded next to the state file. `stats_interval`: the
    engines' VLLM_LOG_STATS_INTERVAL (`--metrics-interval`)."""
    from peagle_sandbox.vllm_engine.install import DEFAULT_VLLM_VERSION, engine_env

    env = engine_env(home, version or DEFAULT_VLLM_VERSION)
    state = state_file.parent if state_file else Path.cwd()
    host = EngineHost(
        harness,
        DEFAULT_ACCOUNT_ID,
        url,
        env,
        work_dir=Path(tempfile.mkdtemp(prefix="peagle-engines-")),
        records_dir=state / "engines",
        stats_interval=stats_interval,
    )
    harness.host = host
    runtime.engine_host = host
    return host


class TrainerMissing(Exception):
    """A trainer was asked for and its venv is not there (the server exits 2)."""


def start_trainer(
    harness: SageMakerHarness,
    home: Path | None,
    *,
    wanted: bool = False,
    state_file: Path | None = None,
) -> TrainerHost | None:
    """The training host, or None for the SIMULATED trainer. A home comes from `home`
    (`--trainer-home`), else PEAGLE_TRAINER_HOME, else (`wanted`: `--trainer`) the engine
    home, where install-trainer builds by default. A home without its venv is
    TrainerMissing: asked for a real trainer, the sandbox never trains with a fake one."""
    home = home or (Path(env) if (env := settings.get("PEAGLE_TRAINER_HOME")) else None)
    if home is None and wanted:
        home = settings.engine_home()
    if home is None:
        return None
    python = trainer_python(home)
    if not python.exists():
        raise TrainerMissing(
            f"no trainer venv at {python.parent.parent} "
            "(fix: `peagle sandbox install-trainer`, or set PEAGLE_TRAINER_HOME)"
        )
    # Job directories and process records beside the state file (as the engines'), so a
    # killed server's are found again: its processes by `peagle sandbox stop`, its
    # directories by the next host, which clears them.
    if state_file is not None:
        work, records = state_file.parent / "training", state_file.parent / "engines"
    else:
        work, records = Path(tempfile.mkdtemp(prefix="peagle-training-")), None
    trainer = TrainerHost(python, work, harness.clock, records_dir=records)
    harness.training.trainer = trainer
    return trainer


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(name)s %(message)s"
    )
    try:  # which instance types each region offers (read before AWS_* is reset below)
        region_types = quotas.parse_region_types(
            ";".join([settings.get(quotas.INSTANCE_TYPES_ENV) or "", *args.instance_types])
        )
    except ValueError as e:
        log.error("--instance-types / %s: %s", quotas.INSTANCE_TYPES_ENV, e)
        return 2
    quotas.configure(region_types)
    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.WARNING)
    # This process's own boto3 calls (seeding) must never find real credentials.
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        del os.environ[name]
    os.environ.update(
        AWS_ACCESS_KEY_ID="peagle-sandbox",
        AWS_SECRET_ACCESS_KEY="peagle-sandbox",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    real = args.engine == "vllm"
    harness_cls = EngineHarness if real else SageMakerHarness
    hold = HOLD_SECONDS if real else None  # the real engine's /ping ends Creating
    clock = SandboxClock(args.clock_rate, frozen=args.clock_frozen)
    harness = harness_cls(
        creating_seconds=hold or args.creating_seconds,
        updating_seconds=hold or args.updating_seconds,
        deleting_seconds=args.deleting_seconds or None,
        clock=clock,
        # The tick below evaluates CloudWatch alarms after the simulated lines it writes.
        evaluate_on_advance=False,
    ).install()
    try:  # before anything listens: a missing trainer is one line and exit 2
        trainer = start_trainer(
            harness, args.trainer_home, wanted=args.trainer, state_file=args.state_file
        )
    except TrainerMissing as e:
        log.error("error: %s", e)
        return 2
    logs = LogSimulator(
        harness,
        DEFAULT_ACCOUNT_ID,
        creating_seconds=args.creating_seconds,
        metrics_interval=args.metrics_interval,
        upstream=args.upstream,
    )
    info: dict[str, Any] = {"pid": os.getpid(), "account": DEFAULT_ACCOUNT_ID}
    runtime = Runtime(
        harness,
        DEFAULT_ACCOUNT_ID,
        logs,
        GroundTruth(),
        upstream=args.upstream,
        seed=args.seed,
        constants=replace(constants_from_env(), step_time_factor=args.step_time_factor),
        info=info,
    )
    server = SandboxServer(runtime, args.port)
    server.start()
    if server.error is not None:
        log.error("cannot listen on %s:%s: %s", HOST, args.port, server.error)
        return 1
    port = server.get_host_and_port()[1]
    url = f"http://{HOST}:{port}"
    regions = ["us-east-1", "us-west-2", *args.region]
    role_arn = seed_account(url, regions)
    tiny = seed_tiny_models(url, args.engine_home)
    host = None
    if real:
        host = start_host(
            harness,
            runtime,
            url,
            args.engine_home,
            args.vllm_version,
            args.state_file,
            stats_interval=args.metrics_interval,
        )

    stop = threading.Event()

    def tick() -> None:
        if host is None:  # real engines write their own log lines, never simulated ones
            try:
                logs.tick()
            except Exception:  # a log hiccup must not take the sandbox down
                log.exception("log simulator tick failed")
        try:
            # EventBridge Scheduler's schedules due by now run (an expiry deletes its
            # endpoint with no peagle process), before alarms judge the minute.
            harness.run_schedules()
        except Exception:
            log.exception("running schedules failed")
        try:  # training jobs move on the clock: logs, trainer processes, outputs
            harness.run_training()
        except Exception:
            log.exception("walking training jobs failed")
        try:
            # Alarms judge each period boundary that passed, after the lines due by then
            # were ingested (metric filters run on ingestion).
            harness.evaluate_alarms()
        except Exception:
            log.exception("alarm evaluation failed")

    def ticker() -> None:
        while not stop.wait(0.25):
            tick()

    # After an advance or a resume, whatever became due is written (and judged) before the
    # POST /_peagle/clock answers: a test that moved the clock reads the lines at once.
    clock.on_advance(tick)
    threading.Thread(target=ticker, name="peagle-ticker", daemon=True).start()
    info.update(
        port=port,
        url=url,
        runtime_url=url,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        clock_rate=args.clock_rate,
        clock_frozen=args.clock_frozen,
        log=args.log_file,
        upstream=args.upstream,
        region="us-east-1",
        seeded_regions=sorted(set(regions)),
        role_arn=role_arn,
        creating_seconds=args.creating_seconds,
        updating_seconds=args.updating_seconds,
        deleting_seconds=args.deleting_seconds,
        metrics_interval=args.metrics_interval,
        step_time_factor=args.step_time_factor,
        time_scale=args.step_time_factor,  # the old name, read by older clients (one release)
        simulated=not real,
        engine_kind=args.engine,
        engine_label=host.label if host else "SIMULATED",
        tiny_models=tiny,
        trainer=str(trainer.python) if trainer else "SIMULATED",
        # Regions that offer only some instance types (the rest offer all botocore knows).
        region_instance_types={r: sorted(t) for r, t in sorted(region_types.items())},
    )
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.state_file:
        _write_state(args.state_file, info)
    label = host.label if host else "SIMULATED"
    log.info("peagle sandbox (engine: %s) listening on %s, pid %s", label, url, os.getpid())
    while not stop.wait(0.1):
        pass
    log.info("stopping")
    if host is not None:
        host.stop_all()  # every engine's process group, before the state file goes
    if trainer is not None:
        trainer.stop_all()
    if args.state_file:
        _remove_state(args.state_file)
    logging.shutdown()
    sys.stdout.flush()
    # Everything lives in memory and dies with the process: skip the werkzeug shutdown poll
    # (0.5 s) and interpreter teardown; in-flight streams end like a killed container's.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
