"""`peagle bench` inside Locust: the same streaming client and records, on many machines.

    locust -f locustfile.py --master --headless --expect-workers 2 -u 8 -r 8 --run-time 30m \
        --peagle-endpoint NAME --peagle-requests 256 --peagle-out results.json
    locust -f locustfile.py --worker --master-host MASTER_IP        # on each load machine

(`peagle bench NAME --locust --locust-print-commands` prints these for a given run.)

Each worker sends requests with the benchmark's own RuntimeClient and `Requester`, so a
request is timed and recorded exactly as `peagle bench` does it (TTFT from the first
content chunk, tokens from usage, retries off). Every record also becomes a Locust request
event ("stream", e2e in ms, output tokens as the length) for Locust's UI and stats.

The run is a closed loop over a fixed request budget:
1. a worker whose users are spawned sends `peagle_ready` (its user count) to the master;
2. once every worker is ready, the master splits the budget in proportion to users and
   sends each worker `peagle_go` (first request index, count): all start together, after
   the ramp-up, so the measured window never includes spawning;
3. a worker's users share its budget; records travel to the master with Locust's periodic
   worker report (`report_to_master` -> `worker_report`), the rest in `peagle_done`;
4. when every worker is done, the master builds the `peagle.bench/3` document (one level)
   and quits. `--run-time` is only a safety cap: if it fires first, the document keeps
   what arrived and says the run was incomplete.

Only the standard library, gevent and locust are imported at module level: Locust puts this
file's directory first on sys.path while importing it, where `datasets.py` would shadow
Hugging Face's `datasets`; peagle modules are imported when first needed, after that.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

import gevent
from gevent.event import Event
from locust import User, constant, events, task
from locust.env import Environment
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

log = logging.getLogger("peagle.locust")


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    # Given to the master only: Locust forwards custom options to workers with each spawn.
    add = parser.add_argument
    add("--peagle-endpoint", default="", env_var="PEAGLE_LOCUST_ENDPOINT", help="Endpoint name.")
    add("--peagle-region", default="", env_var="PEAGLE_LOCUST_REGION", help="AWS region.")
    add("--peagle-dataset", default="", env_var="PEAGLE_LOCUST_DATASET", help="Dataset spec.")
    add("--peagle-requests", type=int, default=0, env_var="PEAGLE_LOCUST_REQUESTS",
        help="Requests over all workers (default: 4 x users, >= 8).")  # fmt: skip
    add("--peagle-max-tokens", type=int, default=256, env_var="PEAGLE_LOCUST_MAX_TOKENS")
    add("--peagle-temperature", type=float, default=None, env_var="PEAGLE_LOCUST_TEMPERATURE")
    add("--peagle-acceptance-wait", type=float, default=25.0,
        env_var="PEAGLE_LOCUST_ACCEPTANCE_WAIT", help="SpecDecoding wait (s).")  # fmt: skip
    add("--peagle-out", default="peagle-locust.json", env_var="PEAGLE_LOCUST_OUT",
        help="Where the master writes the peagle.bench/3 document.")  # fmt: skip


def _opt(env: Environment, name: str) -> Any:
    return getattr(env.parsed_options, f"peagle_{name}", None)


class StreamFailed(Exception):
    """What a failed record becomes for Locust's failure table (grouped by kind)."""


class _WorkerSide:
    """This process's share: the client, the budget its users draw from, unsent records."""

    def __init__(self) -> None:
        self.go = Event()
        self.requester: Any = None
        self.dataset_sha = ""
        self.first = self.budget = self.taken = self.completed = 0
        self.index = 0
        self.cpu0 = 0.0
        self.pending: list[dict[str, Any]] = []
        self.done_sent = False

    def prepare(self, env: Environment, users: int) -> None:
        """Build the client and load the prompts before the clock starts, then report ready."""
        if self.requester is not None:  # a later re-dispatch (a worker left): keep going
            return
        from sm_peagle.benchmarking.datasets import load_dataset
        from sm_peagle.benchmarking.load import LoadSpec, Requester, bench_client, install_hooks

        try:
            dataset = load_dataset(_opt(env, "dataset") or None)
            spec = LoadSpec(
                concurrency=max(users, 1),
                max_tokens=int(_opt(env, "max_tokens") or 256),
                temperature=_opt(env, "temperature"),
            )
            rt = bench_client(_opt(env, "region") or None, _opt(env, "endpoint"), spec.concurrency)
            # The same hooks and requester as run_level: request id, sandbox marker, timing.
            install_hooks(rt)
            self.requester = Requester(rt, dataset, spec, worker=0)
            self.dataset_sha = dataset.sha256
        except Exception as e:  # one line to the master's log; the run cannot start
            log.error("peagle worker cannot start: %s: %s", type(e).__name__, e)
            env.runner.send_message("peagle_ready", {"users": 0, "error": str(e)[:300]})
            return
        ready = {"users": users, "sha256": self.dataset_sha, "host": socket.gethostname()}
        env.runner.send_message("peagle_ready", ready)

    def start(self, env: Environment, data: dict[str, Any]) -> None:
        self.first, self.budget, self.index = data["first"], data["budget"], data["worker"]
        if self.requester is not None:
            self.requester.worker = self.index
        self.cpu0 = time.process_time()
        self.go.set()
        if self.budget == 0:
            self.maybe_done(env)

    def take(self) -> int | None:
        """The next request index of this worker's budget (greenlets: no lock needed)."""
        if self.taken >= self.budget:
            return None
        self.taken += 1
        return self.first + self.taken - 1

    def record(self, env: Environment, record: Any) -> None:
        from sm_peagle.benchmarking.distributed import encode_record

        exc = None if record.ok else StreamFailed(record.error_kind or "failed")
        env.events.request.fire(
            request_type="SageMaker",
            name="stream",
            response_time=(record.ended_at - record.sent_at) * 1000.0,
            response_length=record.output_tokens or 0,
            response=None,
            context={},
            exception=exc,
        )
        self.pending.append(encode_record(record))
        self.completed += 1
        self.maybe_done(env)

    def drain(self) -> list[dict[str, Any]]:
        out, self.pending = self.pending, []
        return out

    def maybe_done(self, env: Environment) -> None:
        if self.done_sent or self.completed < self.budget:
            return
        self.done_sent = True
        simulated = bool(self.requester is not None and self.requester.simulated)
        env.runner.send_message(
            "peagle_done",
            {
                "records": self.drain(),
                "cpu_s": time.process_time() - self.cpu0,
                "sent": self.completed,
                "simulated": simulated,
            },
        )


class _MasterSide:
    """Splits the budget, merges every worker's records, writes the document once."""

    def __init__(self) -> None:
        self.ready: dict[str, dict[str, Any]] = {}
        self.budgets: dict[str, int] = {}
        self.records: list[Any] = []
        self.cpu: dict[str, float] = {}
        self.received: dict[str, int] = {}
        self.done: set[str] = set()
        self.simulated = False
        self.started_at: float | None = None
        self.finishing = self.written = False
        self.notes: list[str] = []

    def on_ready(self, env: Environment, node: str, data: dict[str, Any]) -> None:
        from sm_peagle.benchmarking.distributed import split_budget

        self.ready[node] = data
        if data.get("error"):
            log.error("peagle: worker %s could not start: %s", node, data["error"])
            self.notes.append(f"worker {node} could not start: {data['error']}")
        expected = getattr(env.runner, "worker_count", 1)  # LocalRunner: one "worker", itself
        if self.started_at is not None or len(self.ready) < expected:
            return
        order = sorted(self.ready, key=lambda n: _worker_index(env, n))
        users = [int(self.ready[n].get("users") or 0) for n in order]
        requests = int(_opt(env, "requests") or 0) or max(8, 4 * sum(users))
        if sum(users) == 0:
            log.error("no worker has users to run; stopping")
            gevent.spawn(self.finish, env)
            return
        shas = {self.ready[n].get("sha256") for n in order if self.ready[n].get("sha256")}
        if len(shas) > 1:  # e.g. a FILE.jsonl that differs between machines
            self.notes.append(f"workers loaded different datasets (sha256 {sorted(shas)})")
        self.started_at = time.time()
        for w, (node, (first, budget)) in enumerate(
            zip(order, split_budget(users, requests), strict=True)
        ):
            self.budgets[node] = budget
            data = {"first": first, "budget": budget, "worker": w}
            env.runner.send_message("peagle_go", data, client_id=node)
        log.info(
            "peagle: %d requests over %d users on %d workers", requests, sum(users), len(users)
        )

    def on_records(self, env: Environment, node: str, records: list[dict[str, Any]]) -> None:
        from sm_peagle.benchmarking.distributed import decode_record

        self.records.extend(decode_record(r) for r in records)
        self.received[node] = self.received.get(node, 0) + len(records)

    def on_done(self, env: Environment, node: str, data: dict[str, Any]) -> None:
        self.on_records(env, node, data.get("records") or [])
        self.cpu[node] = float(data.get("cpu_s") or 0.0)
        self.simulated = self.simulated or bool(data.get("simulated"))
        if self.received.get(node, 0) != int(data.get("sent") or 0):
            self.notes.append(
                f"worker {node}: {data.get('sent')} requests sent, "
                f"{self.received.get(node, 0)} records received"
            )
        self.done.add(node)
        if self.budgets and self.done >= set(self.budgets) and not self.finishing:
            # Off the message loop: reading acceptance from CloudWatch can take a while.
            gevent.spawn(self.finish, env)

    def finish(self, env: Environment) -> None:
        self.finishing = True
        self.write(env)
        opts = env.parsed_options
        if opts is None or opts.headless or getattr(opts, "autoquit", -1) != -1:
            env.runner.quit()
        else:
            env.runner.stop()  # the web UI stays up to look at; Ctrl-C ends it

    def write(self, env: Environment, incomplete: str | None = None) -> None:
        if self.written or self.started_at is None:
            return
        self.written = True
        from locust import __version__ as locust_version

        from sm_peagle.benchmarking.distributed import locust_document
        from sm_peagle.benchmarking.results import save_document
        from sm_peagle.benchmarking.runner import level_line

        notes = list(self.notes)
        if incomplete:
            notes.append(incomplete)
        requests = sum(self.budgets.values())
        if len(self.records) != requests:
            notes.append(f"incomplete: {len(self.records)} of {requests} requests recorded")
        users = sum(int(d.get("users") or 0) for d in self.ready.values())
        try:
            doc = locust_document(
                endpoint=_opt(env, "endpoint"), region=_opt(env, "region") or None,
                dataset=_opt(env, "dataset") or None, records=self.records,
                cpu_seconds=list(self.cpu.values()), users=users, workers=len(self.ready),
                requests=requests, max_tokens=int(_opt(env, "max_tokens") or 256),
                temperature=_opt(env, "temperature"),
                acceptance_wait_s=float(_opt(env, "acceptance_wait") or 0.0),
                started_at=self.started_at, simulated=self.simulated, notes=notes,
                locust_version=locust_version,
                hosts=sorted({str(d["host"]) for d in self.ready.values() if d.get("host")}),
            )  # fmt: skip
            path = save_document(doc, _out_path(env))
        except Exception as e:  # logged for run_locust, which then reports no document
            log.exception("peagle: could not write the results document: %s", e)
            env.process_exit_code = 3
            return
        log.info("peagle: %s", level_line(doc["levels"][0]))
        log.info("peagle: wrote %s", path)


def _out_path(env: Environment) -> Any:
    from pathlib import Path

    return Path(_opt(env, "out") or "peagle-locust.json").expanduser()


def _worker_index(env: Environment, node: str) -> int:
    get = getattr(env.runner, "get_worker_index", None)
    return int(get(node)) if get is not None else 0


_WORKER = _WorkerSide()
_MASTER = _MasterSide()


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    if runner is None:
        return
    is_master = not isinstance(runner, WorkerRunner)  # MasterRunner or LocalRunner
    is_worker = not isinstance(runner, MasterRunner)
    if is_master:
        if not _opt(environment, "endpoint"):
            raise SystemExit("peagle: --peagle-endpoint is required on the master")
        runner.register_message("peagle_ready", _on_ready)
        runner.register_message("peagle_done", _on_done)
    if is_worker:
        runner.register_message("peagle_go", _on_go)


def _on_ready(environment: Environment, msg: Any) -> None:
    _MASTER.on_ready(environment, msg.node_id, msg.data)


def _on_done(environment: Environment, msg: Any) -> None:
    _MASTER.on_done(environment, msg.node_id, msg.data)


def _on_go(environment: Environment, msg: Any) -> None:
    _WORKER.start(environment, msg.data)


@events.spawning_complete.add_listener
def _on_spawned(user_count: int, **_: Any) -> None:
    env = _ENV.get("env")
    if env is None or isinstance(env.runner, MasterRunner):
        return
    # Off the message loop: creating the boto3 client and loading prompts take a moment.
    gevent.spawn(_WORKER.prepare, env, env.runner.user_count)


@events.report_to_master.add_listener
def _on_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    # Every few seconds (Locust's worker report) ship what finished since the last report.
    records = _WORKER.drain()
    if records:
        data["peagle_records"] = records


@events.worker_report.add_listener
def _on_worker_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    records = data.get("peagle_records")
    env = _ENV.get("env")
    if records and env is not None:
        _MASTER.on_records(env, client_id, records)


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_: Any) -> None:
    # Ctrl-C, SIGTERM or the --run-time cap before every request finished: keep what came.
    if not isinstance(environment.runner, WorkerRunner):
        if not isinstance(environment.runner, MasterRunner):  # local run: no worker reports
            _MASTER.on_records(environment, "local", _WORKER.drain())
        _MASTER.write(environment, "stopped before every request finished (--run-time cap?)")


_ENV: dict[str, Environment] = {}


@events.init.add_listener
def _remember(environment: Environment, **_: Any) -> None:
    # Some events (spawning_complete, worker_report) do not pass the environment.
    _ENV["env"] = environment


class PeagleStreamUser(User):
    """One closed-loop stream: the next request as soon as the previous one ended."""

    wait_time = constant(0)

    @task
    def stream(self) -> None:
        _WORKER.go.wait()
        index = _WORKER.take()
        if index is None or _WORKER.requester is None:
            raise StopUser()
        _WORKER.record(self.environment, _WORKER.requester(index))
