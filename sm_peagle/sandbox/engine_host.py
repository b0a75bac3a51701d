"""The sandbox as a SageMaker host running the REAL vLLM engine (CPU): `--engine vllm`.

On CreateEndpoint (and UpdateEndpoint) the host, one engine at a time (each takes about
3 GB and 20-40 s to start on 2 CPUs):

1. materialises the model's S3 data under a root standing for `/opt/ml` (`engine_files`);
2. starts peagle's own container entrypoint with the model's Environment, `/opt/ml`
   mapped and the sandbox's flags appended (`engine_setup.SANDBOX_FLAGS`), in its own
   process group, its stdout/stderr going line by line to the endpoint's CloudWatch
   group `/aws/sagemaker/Endpoints/<name>` (one stream per incarnation);
3. keeps the endpoint `Creating` (`Updating`) until the engine's `/ping` answers 200, then
   `InService` (an update switches over and stops the old engine); if the engine exits
   first, the endpoint goes `Failed` (an update keeps the old engine and reports the
   reason) with vLLM's own last error line as `FailureReason`.

DeleteEndpoint, a replaced incarnation and sandbox stop end the engine's whole process
group and wait until it is gone, so its port is free again. Each running group is also
recorded as `<pgid>.pgid` in the state directory, so `peagle sandbox stop` can still end
the engines of a server that was killed.
"""

from __future__ import annotations

import itertools
import queue
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moto.logs.models import logs_backends
from moto.sagemaker.models import sagemaker_backends

from ..testing.moto_sagemaker import endpoint_log_group
from .engine_files import MaterialiseError, materialise
from .engine_setup import container_environ, entrypoint_command, flag_table_lines
from .engine_setup import write_vllm_shim as _write_shim
from .procs import kill_group

__all__ = ["EngineHost", "last_error_line"]

DEFAULT_STARTUP_TIMEOUT = 600.0  # SageMaker's health-check timeout when the variant has none
_ERROR = re.compile(r"Error|error|ERROR|Exception|FATAL|Fatal|Killed")
_NOISE = re.compile(r"^(File \"|\^|~|For further information|Traceback \(most recent)")
Key = tuple[str, str]  # (region, endpoint name)


def last_error_line(lines: list[str]) -> str:
    """vLLM's own last error line: the newest line that names an error, skipping traceback
    frames and pydantic's trailing URL line; else the last line."""
    for line in reversed(lines):
        text = line.strip()
        if text and not _NOISE.match(text) and _ERROR.search(text):
            return text
    return lines[-1].strip() if lines else "(the engine wrote nothing)"


@dataclass(eq=False)
class Engine:
    """One engine process for one endpoint incarnation."""

    region: str
    name: str
    config: str
    kind: str  # "create" | "update"
    number: int
    port: int = 0
    root: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    ready: bool = False
    cancelled: bool = False
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    pump: threading.Thread | None = None
    started: float = field(default_factory=time.time)

    @property
    def key(self) -> Key:
        return (self.region, self.name)

    @property
    def stream(self) -> str:
        return f"AllTraffic/i-sandbox-{self.number:04d}-{self.config}"[:512]

    def describe(self) -> dict[str, Any]:
        return {
            "endpoint": self.name,
            "region": self.region,
            "config": self.config,
            "pid": self.proc.pid if self.proc else None,
            "port": self.port,
            "url": f"http://127.0.0.1:{self.port}" if self.port else None,
            "ready": self.ready,
            "root": str(self.root) if self.root else None,
            "log_stream": self.stream,
        }


class EngineHost:
    """Starts, tracks and stops the engines of every endpoint (see the module doc)."""

    def __init__(
        self,
        harness: Any,  # engine_harness.EngineHarness
        account: str,
        sandbox_url: str,
        engine_env: Any,  # vllm_engine.install.EngineEnv
        work_dir: Path,
        records_dir: Path,
    ) -> None:
        self.harness, self.account, self.url, self.env = harness, account, sandbox_url, engine_env
        self.work_dir, self.records_dir = work_dir, records_dir
        self.label = f"vllm {engine_env.version} (CPU, tiny model)"
        self._lock = threading.Lock()
        self._serving: dict[Key, Engine] = {}
        self._starting: dict[Key, Engine] = {}
        self._jobs: queue.Queue[Engine | None] = queue.Queue()
        self._numbers = itertools.count(1)
        self._shim_dir = _write_shim(work_dir / "bin", engine_env.python).parent
        self._worker = threading.Thread(target=self._work, name="peagle-engine-host", daemon=True)
        self._worker.start()

    # ---------------------------------------------------------------- hooks and queries

    def submit(self, region: str, name: str, config: str, kind: str) -> None:
        """Queue an engine start (called from moto's request thread: must not block)."""
        engine = Engine(region, name, config, kind, next(self._numbers))
        with self._lock:
            old = self._starting.pop(engine.key, None)
            if old is not None:
                old.cancelled = True  # superseded before it was ready
            self._starting[engine.key] = engine
        self._log(engine, [f"peagle-sandbox: queued a real vLLM engine ({self.label}) for {name}"])
        self._jobs.put(engine)

    def deleted(self, region: str, name: str) -> None:
        """DeleteEndpoint: end every engine of the endpoint and wait until they are gone."""
        with self._lock:
            engines = [
                e
                for e in (
                    self._starting.pop((region, name), None),
                    self._serving.pop((region, name), None),
                )
                if e
            ]
        for engine in engines:
            engine.cancelled = True
            self._stop(engine, "endpoint deleted")

    def url_for(self, region: str, name: str) -> str | None:
        """Base URL of the engine serving the endpoint (the old one during an update)."""
        with self._lock:
            engine = self._serving.get((region, name))
        return f"http://127.0.0.1:{engine.port}" if engine and engine.ready else None

    def engines(self) -> list[dict[str, Any]]:
        with self._lock:
            live = [*self._serving.values(), *self._starting.values()]
        return [e.describe() for e in live if e.proc is not None]

    def stop_all(self) -> None:
        """Sandbox stop: cancel queued starts and end every engine (in parallel)."""
        self._jobs.put(None)
        with self._lock:
            engines = [*self._starting.values(), *self._serving.values()]
            self._starting.clear()
            self._serving.clear()
        threads = []
        for engine in engines:
            engine.cancelled = True
            t = threading.Thread(target=self._stop, args=(engine, "sandbox stopping"))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        shutil.rmtree(self.work_dir, ignore_errors=True)  # every /opt/ml root and the shim

    # ---------------------------------------------------------------- the worker

    def _work(self) -> None:
        while (engine := self._jobs.get()) is not None:
            if engine.cancelled:
                continue
            try:
                self._start(engine)
            except Exception as e:  # a host bug must fail the endpoint, not the sandbox
                self._fail(engine, f"sandbox host error: {type(e).__name__}: {e}")

    def _container(self, engine: Engine) -> tuple[dict[str, Any], float]:
        """(PrimaryContainer of the config's first variant's model, start-up timeout)."""
        backend = sagemaker_backends[self.account][engine.region]
        variant = backend.endpoint_configs[engine.config].production_variants[0]
        model = backend._models[variant["ModelName"]]
        timeout = variant.get("ContainerStartupHealthCheckTimeoutInSeconds")
        return dict(model.primary_container or {}), float(timeout or DEFAULT_STARTUP_TIMEOUT)

    def _start(self, engine: Engine) -> None:
        container, timeout = self._container(engine)
        engine.root = self.work_dir / f"{engine.name}-{engine.number:04d}" / "opt-ml"
        shutil.rmtree(engine.root.parent, ignore_errors=True)
        engine.root.mkdir(parents=True)
        try:
            notes = materialise(self._s3(engine.region), container, engine.root)
        except MaterialiseError as e:
            self._fail(engine, str(e))
            return
        env, mapped = container_environ(
            container.get("Environment") or {},
            engine.root,
            engine_home=self.env.home,
            shim_dir=self._shim_dir,
        )
        engine.port = _free_port()
        argv = entrypoint_command(self.env.python, engine.port)
        self._log(
            engine,
            [
                f"peagle-sandbox: REAL engine {self.label}; emulates the DLC entrypoint with "
                "peagle's own (sm_peagle.container.entrypoint), not the DLC's script",
                f"peagle-sandbox: /opt/ml -> {engine.root}",
                *(f"peagle-sandbox: {n}" for n in [*notes, *mapped]),
                *flag_table_lines(),
                f"peagle-sandbox: starting {' '.join(argv)}",
            ],
        )
        if engine.cancelled:
            return
        engine.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=str(engine.root),
            env=env,
            start_new_session=True,  # its own process group: stopped as a whole
        )
        self._record(engine, present=True)
        engine.pump = threading.Thread(target=self._pump, args=(engine,), daemon=True)
        engine.pump.start()
        self._wait_ready(engine, timeout)

    def _wait_ready(self, engine: Engine, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert engine.proc is not None
        while not engine.cancelled:
            if engine.proc.poll() is not None:
                if engine.pump is not None:  # its last lines carry the error
                    engine.pump.join(timeout=5.0)
                code = engine.proc.returncode
                self._fail(
                    engine, f"engine exited with code {code}: {last_error_line(list(engine.tail))}"
                )
                return
            if _ping(engine.port):
                self._ready(engine)
                return
            if time.monotonic() > deadline:
                self._fail(engine, f"the engine did not answer /ping within {timeout:.0f} s")
                return
            time.sleep(0.5)

    def _ready(self, engine: Engine) -> None:
        with self._lock:
            if engine.cancelled or self._starting.get(engine.key) is not engine:
                return
            del self._starting[engine.key]
            old = self._serving.get(engine.key)
            engine.ready = True
            self._serving[engine.key] = engine
        took = time.time() - engine.started
        self._log(engine, [f"peagle-sandbox: /ping answered 200 after {took:.1f} s: InService"])
        self.harness.settle(engine.region, engine.name, "InService")
        if old is not None:
            self._stop(old, "replaced by the updated endpoint config")

    def _fail(self, engine: Engine, reason: str) -> None:
        reason = reason[:1024]  # SageMaker's FailureReason limit
        with self._lock:
            current = self._starting.get(engine.key) is engine
            if current:
                del self._starting[engine.key]
            serving = self._serving.get(engine.key) is engine
            if serving:
                del self._serving[engine.key]
        if not (current or serving) or engine.cancelled:
            self._stop(engine, "superseded")
            return
        self._log(engine, [f"peagle-sandbox: endpoint failed: {reason}"])
        self._stop(engine, "failed")
        if engine.kind == "update" and not serving:  # SageMaker rolls back, keeps serving
            self.harness.settle(engine.region, engine.name, "InService", reason)
        else:
            self.harness.settle(engine.region, engine.name, "Failed", reason)

    # ---------------------------------------------------------------- processes and logs

    def _pump(self, engine: Engine) -> None:
        """Engine output -> CloudWatch, line by line, stamped when written; a serving
        engine that exits by itself fails its endpoint."""
        assert engine.proc is not None and engine.proc.stdout is not None
        for raw in engine.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line:
                engine.tail.append(line)
                self._log(engine, [line])
        engine.proc.wait()
        if engine.ready and not engine.cancelled:
            code = engine.proc.returncode
            self._fail(
                engine, f"engine exited with code {code}: {last_error_line(list(engine.tail))}"
            )

    def _stop(self, engine: Engine, why: str) -> None:
        engine.cancelled = True
        if engine.proc is not None:
            kill_group(engine.proc.pid, grace=10.0)
            engine.proc.wait()
            self._record(engine, present=False)
            self._log(engine, [f"peagle-sandbox: engine pid {engine.proc.pid} stopped ({why})"])
        if engine.root is not None:
            shutil.rmtree(engine.root.parent, ignore_errors=True)

    def _record(self, engine: Engine, *, present: bool) -> None:
        assert engine.proc is not None
        path = self.records_dir / f"{engine.proc.pid}.pgid"
        if present:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{engine.name} {engine.port}\n")
        else:
            path.unlink(missing_ok=True)

    def _log(self, engine: Engine, lines: list[str]) -> None:
        backend = logs_backends[self.account][engine.region]
        group = endpoint_log_group(engine.name)
        now = int(time.time() * 1000)
        try:
            backend.ensure_log_group(group)
            backend.ensure_log_stream(group, engine.stream)
            backend.put_log_events(
                group, engine.stream, [{"timestamp": now, "message": m} for m in lines]
            )
        except Exception:  # a log hiccup must never stop the engine's output pump
            pass

    def _s3(self, region: str) -> Any:
        import boto3

        return boto3.session.Session(
            aws_access_key_id="peagle-sandbox", aws_secret_access_key="peagle-sandbox"
        ).client("s3", region_name=region, endpoint_url=self.url)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/ping", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False
