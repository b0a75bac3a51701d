"""The sandbox as a SageMaker host running the REAL vLLM engine (CPU): `--engine vllm`.

On CreateEndpoint (and UpdateEndpoint) of an endpoint that serves a model, and on
CreateInferenceComponent (and a copy count back above 0) of a component on an endpoint
that hosts components, the host, one engine start at a time (each takes about 3 GB and
20-40 s to start on 2 CPUs):

1. materialises the model's S3 data under a root standing for `/opt/ml` (`engine_files`);
2. starts peagle's own container entrypoint with the model's Environment, `/opt/ml`
   mapped and the sandbox's flags appended (`engine_setup.SANDBOX_FLAGS`), in its own
   process group, its stdout/stderr going line by line to the owner's CloudWatch group
   (`engine_runs.Engine.log_group`; one stream per incarnation);
3. keeps the owner `Creating` (`Updating`) until the engine's `/ping` answers 200, then
   `InService` (an update switches over and stops the old engine); if the engine exits
   first, the owner goes `Failed` (an endpoint update keeps the old engine and reports
   the reason) with vLLM's own last error line as `FailureReason`.

A guardrail update (UpdateEndpoint with a DeploymentConfig: canary, linear, all at once,
rolling) starts the new config's engine in a second slot while the old one keeps serving;
its `/ping` tells the harness the new fleet is provisioned (`harness.fleet_ready`), and the
harness shifts traffic on its schedule: the runtime sends each invocation to the new engine
by the new fleet's share (fleets.py). When the deployment settles (a rollout listener), the
loser drains (the requests vLLM's gauges still count finish) and stops: committed, the old
engine (the new one becomes the endpoint's engine); rolled back, the new one. A new engine
that fails to start, or exits during the deployment, fails the update as above (the harness
rolls back; the old engine serves on). One engine stands for all the instances of a fleet,
old or new (`engines()` says which fleet each is).

An endpoint whose variant names no model hosts inference components: it has no engine of
its own and is `InService` at once; each component gets its own engine
(`engine_components`). DeleteEndpoint, DeleteInferenceComponent, a copy count of 0, a
replaced incarnation and sandbox stop end the engine's whole process group and wait until
it is gone, so its port is free again. Each running group is also recorded as
`<pgid>.pgid` in the state directory, so `peagle sandbox stop` can still end the engines
of a server that was killed.
"""

from __future__ import annotations

import itertools
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moto.logs.models import logs_backends
from moto.sagemaker.models import sagemaker_backends

from peagle_sandbox.engine_components import ComponentEngines
from peagle_sandbox.engine_files import MaterialiseError, materialise
from peagle_sandbox.engine_runs import (
    COMPONENT,
    DEFAULT_STARTUP_TIMEOUT,
    ENDPOINT,
    Engine,
    Key,
    free_port,
    last_error_line,
    ping,
    requests_in_flight,
)
from peagle_sandbox.engine_setup import container_environ, entrypoint_command, flag_table_lines
from peagle_sandbox.engine_setup import write_vllm_shim as _write_shim
from peagle_sandbox.procs import kill_group, record_group
from sm_peagle.contract import CONTAINER_ENTRYPOINT

__all__ = ["EngineHost", "last_error_line"]

# Draining a fleet that loses a deployment: the grace lets an invocation already routed to it
# reach the engine; the limit bounds a request that never ends (real seconds).
DRAIN_GRACE_S = 0.5
DRAIN_LIMIT_S = 20.0  # well inside botocore's 60 s read timeout of the settling request


class EngineHost(ComponentEngines):
    """Starts, tracks and stops the engines of every endpoint and inference component
    (see the module doc; the component hooks are in `ComponentEngines`)."""

    def __init__(
        self,
        harness: Any,  # engine_harness.EngineHarness
        account: str,
        sandbox_url: str,
        engine_env: Any,  # vllm_engine.install.EngineEnv
        work_dir: Path,
        records_dir: Path,
        stats_interval: float | None = None,
    ) -> None:
        self.harness, self.account, self.url, self.env = harness, account, sandbox_url, engine_env
        # vLLM logs its stats lines on its own timer, in real seconds; an invocation holds the
        # sandbox clock at 1:1, so while an engine serves, this is the interval on the clock.
        self.stats_interval = stats_interval
        self.work_dir, self.records_dir = work_dir, records_dir
        self.label = f"vllm {engine_env.version} (CPU, tiny model)"
        self._lock = threading.Lock()
        self._serving: dict[Key, Engine] = {}
        self._starting: dict[Key, Engine] = {}
        self._new_fleet: dict[Key, Engine] = {}  # a guardrail update's new engine, ready
        self._jobs: queue.Queue[Engine | None] = queue.Queue()
        self._numbers = itertools.count(1)
        self._shim_dir = _write_shim(work_dir / "bin", engine_env.python).parent
        self._worker = threading.Thread(target=self._work, name="peagle-engine-host", daemon=True)
        self._worker.start()
        harness.rollout_listeners.append(self._rollout_settled)

    # ---------------------------------------------------------------- hooks and queries

    def submit(self, region: str, name: str, config: str, kind: str) -> None:
        """CreateEndpoint/UpdateEndpoint (moto's request thread: must not block): queue an
        engine start, or, for an endpoint that hosts components, settle it InService."""
        if self._hosts_components(region, config):
            self._log(Engine(region, name, config, kind, 0), [_NO_MODEL])
            for engine in self._take((region, ENDPOINT, name)):  # a switch to components
                self._stop(engine, "replaced by an endpoint config without a model")
            self.harness.settle(region, name, "InService")
            return
        engine = Engine(region, name, config, kind, next(self._numbers))
        state = self.harness.rollout_of(name, region) if kind == "update" else None
        if state is not None and state.new_config == config:  # the old engine serves on
            engine.fleet = "new"
        self._queue(engine)

    def deleted(self, region: str, name: str) -> None:
        """DeleteEndpoint: end every engine on the endpoint (its own, and those of any
        component still on it) and wait until they are gone."""
        with self._lock:
            keys = [
                k
                for k, e in [
                    *self._starting.items(),
                    *self._serving.items(),
                    *self._new_fleet.items(),
                ]
                if k[0] == region and e.endpoint == name
            ]
        for engine in self._take(*keys):
            self._stop(engine, "endpoint deleted")

    def url_for(
        self, region: str, name: str, component: str | None = None, *, fleet: str = "current"
    ) -> str | None:
        """Base URL of the engine serving the endpoint, or the component `component` on it
        (the old engine during an update); with `fleet="new"`, the engine of a guardrail
        update's new fleet. None if none is ready."""
        key = (region, COMPONENT, component) if component else (region, ENDPOINT, name)
        with self._lock:
            table = self._new_fleet if fleet == "new" else self._serving
            engine = table.get(key)
        return f"http://127.0.0.1:{engine.port}" if engine and engine.ready else None

    def engines(self) -> list[dict[str, Any]]:
        """Each engine's process, port, owner and the fleet it stands for: during a
        guardrail update the endpoint's engine is the "old" fleet's, the second the "new"
        one's; otherwise "current"."""
        with self._lock:
            live = [*self._serving.values(), *self._new_fleet.values(), *self._starting.values()]
            updating = {e.key for e in [*self._new_fleet.values(), *self._starting.values()]
                        if e.fleet == "new"}  # fmt: skip
        out = []
        for e in live:
            if e.proc is not None:
                fleet = "old" if e.fleet == "current" and e.key in updating else e.fleet
                out.append(e.describe(fleet))
        return out

    def stop_all(self) -> None:
        """Sandbox stop: cancel queued starts and end every engine (in parallel)."""
        self._jobs.put(None)
        with self._lock:
            keys = {*self._starting, *self._serving, *self._new_fleet}
        threads = []
        for engine in self._take(*keys):
            t = threading.Thread(target=self._stop, args=(engine, "sandbox stopping"))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        shutil.rmtree(self.work_dir, ignore_errors=True)  # every /opt/ml root and the shim

    # ---------------------------------------------------------------- bookkeeping

    def _queue(self, engine: Engine) -> None:
        with self._lock:
            old = self._starting.pop(engine.key, None)
            if old is not None:
                old.cancelled = True  # superseded before it was ready
            self._starting[engine.key] = engine
        what = f"{engine.scope} {engine.name}"
        self._log(engine, [f"peagle-sandbox: queued a real vLLM engine ({self.label}) for {what}"])
        self._jobs.put(engine)

    def _take(self, *keys: Key) -> list[Engine]:
        """Remove the engines of `keys` from the books, cancelled: no invocation reaches
        them any more and a start not yet under way never begins (see `_start`)."""
        out = []
        with self._lock:
            for key in keys:
                for table in (self._starting, self._serving, self._new_fleet):
                    engine = table.pop(key, None)
                    if engine is not None:
                        engine.cancelled = True
                        out.append(engine)
        return out

    def _stop_then(self, engines: list[Engine], why: str, then: Callable[[], Any]) -> None:
        """Stop `engines` off the request thread, then call `then` (settle the owner)."""

        def run() -> None:
            for engine in engines:
                self._stop(engine, why)
            then()

        threading.Thread(target=run, name="peagle-engine-stop", daemon=True).start()

    # ---------------------------------------------------------------- the worker

    def _work(self) -> None:
        while (engine := self._jobs.get()) is not None:
            if engine.cancelled:
                continue
            try:
                self._start(engine)
            except Exception as e:  # a host bug must fail the owner, not the sandbox
                self._fail(engine, f"sandbox host error: {type(e).__name__}: {e}")

    def _hosts_components(self, region: str, config: str) -> bool:
        """The config's first variant names no model: the endpoint hosts components."""
        backend = sagemaker_backends[self.account][region]
        found = backend.endpoint_configs.get(config)
        variants = getattr(found, "production_variants", None) or [{"ModelName": "?"}]
        return not variants[0].get("ModelName")  # a broken config fails in the worker

    def _container(self, engine: Engine) -> tuple[dict[str, Any], float]:
        """(PrimaryContainer of the owner's model, start-up timeout)."""
        if engine.scope != ENDPOINT:
            return self._component_container(engine)
        backend = sagemaker_backends[self.account][engine.region]
        variant = backend.endpoint_configs[engine.source].production_variants[0]
        model = backend._models[variant["ModelName"]]
        timeout = variant.get("ContainerStartupHealthCheckTimeoutInSeconds")
        return dict(model.primary_container or {}), float(timeout or DEFAULT_STARTUP_TIMEOUT)

    def _start(self, engine: Engine) -> None:
        container, timeout = self._container(engine)
        engine.root = self.work_dir / f"{engine.scope}-{engine.name}-{engine.number:04d}" / "opt-ml"
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
        if self.stats_interval is not None:  # --metrics-interval (vLLM's default is also 10 s)
            env["VLLM_LOG_STATS_INTERVAL"] = f"{self.stats_interval:g}"
        engine.port = free_port()
        argv = entrypoint_command(self.env.python, engine.port)
        self._log(
            engine,
            [
                f"peagle-sandbox: REAL engine {self.label}; emulates the DLC entrypoint with "
                f"peagle's own ({CONTAINER_ENTRYPOINT}), not the DLC's script",
                f"peagle-sandbox: /opt/ml -> {engine.root}",
                *(f"peagle-sandbox: {n}" for n in [*notes, *mapped]),
                *flag_table_lines(),
                f"peagle-sandbox: starting {' '.join(argv)}",
            ],
        )
        with self._lock:  # `_take` either sees the process or stops it from starting
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
            if ping(engine.port):
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
            engine.ready = True
            old = None
            if engine.fleet == "new":  # a second slot: the old engine serves on
                self._new_fleet[engine.key] = engine
            else:
                old = self._serving.get(engine.key)
                self._serving[engine.key] = engine
        took = time.time() - engine.started
        if engine.fleet == "new":
            self._log(
                engine,
                [f"peagle-sandbox: /ping answered 200 after {took:.1f} s: the new fleet is "
                 "provisioned (one engine stands for all its instances)"],
            )  # fmt: skip
            self.harness.fleet_ready(engine.region, engine.name)
            return
        self._log(engine, [f"peagle-sandbox: /ping answered 200 after {took:.1f} s: InService"])
        self._settle(engine, "InService")
        if old is not None:
            old.cancelled = True
            self._stop(old, f"replaced by the updated {engine.scope}")

    def _fail(self, engine: Engine, reason: str) -> None:
        reason = reason[:1024]  # SageMaker's FailureReason limit
        with self._lock:
            current = self._starting.get(engine.key) is engine
            if current:
                del self._starting[engine.key]
            serving = self._serving.get(engine.key) is engine
            if serving:
                del self._serving[engine.key]
            if self._new_fleet.get(engine.key) is engine:  # exited during the deployment
                del self._new_fleet[engine.key]
                current = True
        if not (current or serving) or engine.cancelled:
            self._stop(engine, "superseded")
            return
        self._log(engine, [f"peagle-sandbox: {engine.scope} failed: {reason}"])
        self._stop(engine, "failed")
        # SageMaker rolls a failed endpoint update back and keeps serving the old config.
        rolled_back = engine.scope == ENDPOINT and engine.kind == "update" and not serving
        self._settle(engine, "InService" if rolled_back else "Failed", reason)

    def _rollout_settled(
        self, region: str, name: str, outcome: str, old_config: str, new_config: str
    ) -> None:
        """A guardrail deployment of `name` settled (the harness's rollout listener, called
        outside its lock on the thread that settled it): the loser leaves the books at once,
        so no invocation reaches it, then stops before this returns. Committed: the new
        engine becomes the endpoint's and the old one stops; rolled back: the new one stops
        (or never starts)."""
        key = (region, ENDPOINT, name)
        with self._lock:
            new = self._new_fleet.pop(key, None)
            starting = self._starting.get(key)
            if new is None and starting is not None and starting.source == new_config:
                new = self._starting.pop(key)  # rolled back before it answered /ping
            losers = [new] if new is not None else []
            if outcome == "committed" and new is not None and new.ready:
                old = self._serving.get(key)
                new.fleet = "current"
                self._serving[key] = new
                losers = [old] if old is not None else []
            for engine in losers:
                engine.cancelled = True
        for engine in losers:
            self._drain(engine)
            self._stop(engine, f"deployment to {new_config} {outcome}")

    def _drain(self, engine: Engine, limit: float = DRAIN_LIMIT_S) -> None:
        """Let the requests a fleet took before the deployment settled finish before its
        engine stops, as SageMaker drains a fleet it shifts traffic away from: an invocation
        routed a moment before a rollback must not end in a 502. Bounded in real seconds."""
        if engine.proc is None or not engine.ready:
            return
        time.sleep(DRAIN_GRACE_S)  # a request routed just before settling reaches the engine
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and (requests_in_flight(engine.port) or 0) > 0:
            time.sleep(0.2)

    def _settle(self, engine: Engine, status: str, reason: str | None = None) -> None:
        if engine.scope == ENDPOINT:
            self.harness.settle(engine.region, engine.name, status, reason)
        else:
            self.harness.settle_component(engine.region, engine.name, status, reason)

    # ---------------------------------------------------------------- processes and logs

    def _pump(self, engine: Engine) -> None:
        """Engine output -> CloudWatch, line by line, stamped when written; a serving
        engine that exits by itself fails its owner."""
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
        label = f"{engine.scope} {engine.name} {engine.port}"
        record_group(self.records_dir, engine.proc.pid, label, present=present)

    def _log(self, engine: Engine, lines: list[str]) -> None:
        backend = logs_backends[self.account][engine.region]
        now = int(self.harness.clock.now() * 1000)  # sandbox time, as every log event
        try:
            backend.ensure_log_group(engine.log_group)
            backend.ensure_log_stream(engine.log_group, engine.stream)
            backend.put_log_events(
                engine.log_group, engine.stream, [{"timestamp": now, "message": m} for m in lines]
            )
        except Exception:  # a log hiccup must never stop the engine's output pump
            pass

    def _s3(self, region: str) -> Any:
        import boto3

        return boto3.session.Session(
            aws_access_key_id="peagle-sandbox", aws_secret_access_key="peagle-sandbox"
        ).client("s3", region_name=region, endpoint_url=self.url)


_NO_MODEL = (
    "peagle-sandbox: the endpoint config's variant names no model: the endpoint hosts "
    "inference components, each on its own real engine (logs in its own log group)"
)
