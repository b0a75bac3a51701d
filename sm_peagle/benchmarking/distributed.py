"""`peagle bench --locust`: the benchmark's own client and metrics in Locust's distributed mode.

    doc = run_locust("my-endpoint", users=64, requests=1024, workers=4)

`--workers N` spreads load over processes of one machine; Locust (master + workers) spreads
it over machines. Each Locust worker runs sm_peagle/benchmarking/locustfile.py, which sends every
request with the same RuntimeClient and `Requester` as `peagle bench` and ships its
RequestRecords to the master; the master merges them into one `peagle.bench/3` document
(one level, `load.tool == "locust"`). `run_locust` runs that on one machine over loopback
(master + N worker processes) and never leaves a process behind; `commands_text` prints
the same commands for several machines. Locust is an optional extra: nothing here imports
it (the CLI only checks that it is installed), because importing locust monkey-patches the
whole process for gevent.
"""

from __future__ import annotations

import contextlib
import math
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import settings
from ..errors import Call, PeagleError, SpecError
from ..errors import text as words
from .metrics import RequestRecord

__all__ = [
    "INSTALL_HINT",
    "LOCUSTFILE",
    "commands_text",
    "decode_record",
    "encode_record",
    "locust_document",
    "master_args",
    "require_locust",
    "run_locust",
    "split_budget",
]

LOCUSTFILE = Path(__file__).resolve().with_name("locustfile.py")
INSTALL_HINT = "pip install 'sm-peagle[locust]'"
DEFAULT_PORT = 5557  # Locust's own default master port
RUN_TIME_S = 1800.0  # safety cap only: a run ends when its request budget is spent
GRACE_S = 60.0  # past the cap: the master's shutdown and the acceptance read


def _quiet(_: str) -> None:
    pass


def require_locust() -> None:
    """find_spec, not import: importing locust would monkey-patch this process."""
    import importlib.util

    if importlib.util.find_spec("locust") is None:
        raise SpecError(words("{locust} needs Locust, which is not installed: {h}", h=INSTALL_HINT),
                        field="locust", value=True, rule="needs sm-peagle[locust]")  # fmt: skip


def encode_record(r: RequestRecord) -> dict[str, Any]:
    """A record as msgpack-able data, per-chunk gaps and their tokens included (the
    level's ITLs need them)."""
    return {**r.to_dict(), "itl_s": list(r.itl_s), "chunk_tokens": list(r.chunk_tokens)}


def decode_record(doc: dict[str, Any]) -> RequestRecord:
    return replace(
        RequestRecord.from_dict(doc),
        itl_s=tuple(doc.get("itl_s") or ()),
        chunk_tokens=tuple(doc.get("chunk_tokens") or ()),
    )


def split_budget(users: Sequence[int], requests: int) -> list[tuple[int, int]]:
    """(first request index, count) per worker, in proportion to its users: user j of all
    U gets requests // U, one more if j < requests % U. Indices are 0..requests-1 in
    order, so every request has its own dataset item and index, as in `peagle bench`."""
    total = sum(users)
    out, first, slot = [], 0, 0
    for n in users:
        count = sum(requests // total + (1 if j < requests % total else 0)
                    for j in range(slot, slot + n)) if total else 0  # fmt: skip
        out.append((first, count))
        first, slot = first + count, slot + n
    return out


def read_provenance(aws: Any, endpoint: str) -> dict[str, Any]:
    """What the endpoint runs, read back from SageMaker, as `bench_endpoint` does."""
    from ..lifecycle.inventory import endpoint_status
    from .results import provenance_of
    from .runner import SERVING, model_of

    status = endpoint_status(aws.client("sagemaker"), endpoint)
    if status["status"] not in SERVING:
        raise PeagleError(
            f"endpoint {endpoint} is {status['status']}, not InService",
            remedy=words("wait: `{s}`", s=Call("status", endpoint)),
        )
    return {"model": model_of(aws, endpoint), **provenance_of(status)}


def locust_document(
    *, endpoint: str, region: str | None, dataset: str | None, records: Sequence[RequestRecord],
    cpu_seconds: Sequence[float], users: int, workers: int, requests: int, max_tokens: int,
    temperature: float | None, acceptance_wait_s: float, started_at: float, simulated: bool,
    notes: Sequence[str] = (), locust_version: str | None = None, hosts: Sequence[str] = (),
) -> dict[str, Any]:  # fmt: skip
    """The master's merged records -> one `peagle.bench/3` document with one level."""
    from ..aws import AwsContext
    from .acceptance import acceptance_for_levels, acceptance_from_requests, max_drafted_tokens
    from .datasets import load_dataset
    from .metrics import summarize_level
    from .results import bench_document, target_record

    aws = AwsContext(region)
    prov = read_provenance(aws, endpoint)
    target = target_record()
    ordered = sorted(records, key=lambda r: r.sent_at)
    level = summarize_level(
        ordered, concurrency=max(users, 1), cpu_seconds=cpu_seconds,
        usd_per_hour=None if simulated else prov["usd_per_hour"],  # dollars only on AWS
    )  # fmt: skip
    exact = acceptance_from_requests(ordered) if prov["mode"] not in (None, "baseline") else None
    if exact is not None:
        level["acceptance"] = exact
    elif ordered:  # an image without per-request metrics: the windowed log lines
        window = [(level["started_at"], level["ended_at"])]
        (level["acceptance"],) = acceptance_for_levels(
            aws, endpoint, window, mode=prov["mode"], k=prov["k"], wait_s=acceptance_wait_s,
            own_max_drafted=[max_drafted_tokens(ordered, prov["k"])],
        )  # fmt: skip
    load = {
        "kind": "closed",
        "concurrency": [max(users, 1)],
        "rates": [],
        "requests": requests,
        "duration_s": None,
        "warmup": 0,
        "workers": max(workers, 1),  # client processes: the Locust workers
        "max_tokens": max_tokens,
        "temperature": temperature,
        "retries": 0,
        "tool": "locust",
        "users": users,
        "locust_version": locust_version,
        "hosts": list(hosts),  # the machines the workers ran on (`client` is the master's)
    }
    return bench_document(
        provenance=prov, dataset=load_dataset(dataset).describe(), load=load, levels=[level],
        started_at=started_at, ended_at=time.time(), simulated=simulated or target is not None,
        target=target, notes=list(notes),
    )  # fmt: skip


def master_args(
    endpoint: str, *, users: int, requests: int, workers: int, region: str | None = None,
    dataset: str | None = None, max_tokens: int = 256, temperature: float | None = None,
    acceptance_wait_s: float = 25.0, out: str | Path = "peagle-locust.json",
    bind_host: str | None = None, port: int = DEFAULT_PORT, run_time_s: float = RUN_TIME_S,
    connect_timeout_s: float = 60.0, headless: bool = True, locustfile: str | Path = LOCUSTFILE,
) -> list[str]:  # fmt: skip
    """`locust` arguments for the master. The peagle options reach the workers with each
    spawn message, so a worker needs only `--worker --master-host H`."""
    args = ["-f", str(locustfile), "--master", "--master-bind-port", str(port)]
    if bind_host:
        args += ["--master-bind-host", bind_host]
    args += ["--expect-workers", str(workers)]
    args += ["--expect-workers-max-wait", str(math.ceil(connect_timeout_s))]
    # All users spawn within ~1 s; the master starts the clock only once every one has.
    # (Locust warns above 100 users/s per worker.)
    rate = min(users, 100 * max(workers, 1))
    args += ["-u", str(users), "-r", str(rate), "--run-time", f"{math.ceil(run_time_s)}s"]
    # Failed requests are in the document; a non-zero exit means Locust itself failed.
    args += ["--exit-code-on-error", "0"]
    args += ["--headless"] if headless else ["--autostart", "--autoquit", "10"]
    args += ["--peagle-endpoint", endpoint, "--peagle-requests", str(requests)]
    args += ["--peagle-max-tokens", str(max_tokens)]
    args += ["--peagle-acceptance-wait", f"{acceptance_wait_s:g}"]
    for flag, value in (("region", region), ("dataset", dataset), ("temperature", temperature)):
        if value is not None and value != "":
            args += [f"--peagle-{flag}", str(value)]
    return [*args, "--peagle-out", str(out)]


def worker_args(
    master_host: str, port: int = DEFAULT_PORT, locustfile: str | Path = LOCUSTFILE
) -> list[str]:
    return [
        "-f",
        str(locustfile),
        "--worker",
        "--master-host",
        master_host,
        "--master-port",
        str(port),
    ]


def commands_text(endpoint: str, *, workers: int, port: int = DEFAULT_PORT, **options: Any) -> str:
    """Shell commands for a run over several machines (`--locust-print-commands`)."""
    lf = '"$LOCUSTFILE"'
    options.setdefault("connect_timeout_s", 600.0)  # people start the workers by hand
    master = master_args(endpoint, workers=workers, port=port, locustfile=lf, **options)
    worker = worker_args('"$MASTER_IP"', port, locustfile=lf)

    def line(args: list[str]) -> str:
        return " ".join(a if a.startswith('"$') else shlex.quote(a) for a in ["locust", *args])

    find = "from sm_peagle.benchmarking.distributed import LOCUSTFILE; print(LOCUSTFILE)"
    return "\n".join(
        [
            "# every machine: pip install 'sm-peagle[locust]' and AWS credentials for the region",
            f"LOCUSTFILE=$(python -c '{find}')",
            f"# the master (port {port} reachable from the workers; writes the results document):",
            line(master),
            f"# each of the {workers} worker machines (MASTER_IP: the master's address):",
            line(worker),
        ]
    )


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    # Linux: if the CLI is killed outright (SIGKILL, a test timeout), its Locust processes
    # get SIGTERM instead of running on for up to the --run-time cap.
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _spawn(cmd: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    # This checkout first on the workers' path, so they import the same sm_peagle.
    env = settings.child_environ(prepend={"PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    with open(log, "wb") as out:
        return subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=str(cwd),
            env=env, start_new_session=True,  # Ctrl-C reaches the CLI, which stops them
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )  # fmt: skip


def _tail(path: Path, lines: int = 4) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def _stop(procs: Sequence[subprocess.Popen[bytes]], grace: float) -> None:
    """Wait up to `grace` for each to exit, then SIGTERM, then SIGKILL; always reaped."""
    deadline = time.monotonic() + grace
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def run_locust(
    endpoint: str, *, users: int, requests: int, workers: int, region: str | None = None,
    dataset: str | None = None, max_tokens: int = 256, out: Path | None = None,
    master_host: str | None = None, master_port: int | None = None,
    expect_workers: int | None = None, headless: bool = True, temperature: float | None = None,
    acceptance_wait_s: float = 25.0, run_time_s: float = RUN_TIME_S,
    connect_timeout_s: float = 60.0, say: Callable[[str], None] = _quiet,
) -> dict[str, Any]:  # fmt: skip
    """One Locust master and `workers` worker processes here, the master's document back.

    `master_host`: the address the master binds and local workers connect to (default
    127.0.0.1: loopback only). `expect_workers` > `workers` makes the master also wait for
    workers started on other machines. Bounded: the run-time cap, plus a grace period."""
    require_locust()
    expect = expect_workers or workers
    if users < 1 or requests < 1 or workers < 0 or expect < max(workers, 1):
        raise SpecError(words("{locust} needs users >= 1, requests >= 1 and at least one worker"),
                        field="locust", value=True)  # fmt: skip
    from ..aws import AwsContext
    from .results import load_document, save_document
    from .runner import level_line

    # Fail fast, with one line, on an endpoint that is missing or not serving; the master
    # reads it again for the document, since on several machines it may run elsewhere.
    read_provenance(AwsContext(region), endpoint)

    host = master_host or "127.0.0.1"
    port = master_port or _free_port(host)
    workdir = Path(tempfile.mkdtemp(prefix="peagle-locust-"))
    result = workdir / "results.json"  # `out` is written only from a complete document
    common = dict(region=region, dataset=dataset, max_tokens=max_tokens, temperature=temperature)
    margs = master_args(
        endpoint, users=users, requests=requests, workers=expect, out=result, bind_host=host,
        port=port, acceptance_wait_s=acceptance_wait_s, run_time_s=run_time_s,
        connect_timeout_s=connect_timeout_s, headless=headless, **common,
    )  # fmt: skip
    locust = [sys.executable, "-m", "locust"]
    say(f"locust: master on {host}:{port}, {workers} local worker(s) of {expect}, {users} users, "
        f"{requests} requests (logs: {workdir}, kept if it fails)")  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    ok = False
    try:
        logs.append(workdir / "master.log")
        procs.append(_spawn([*locust, *margs], logs[0], workdir))
        for i in range(workers):
            logs.append(workdir / f"worker-{i}.log")
            procs.append(_spawn([*locust, *worker_args(host, port)], logs[-1], workdir))
        deadline = time.monotonic() + connect_timeout_s + run_time_s + acceptance_wait_s + GRACE_S
        master = procs[0]
        while master.poll() is None:
            for p, log in zip(procs[1:], logs[1:], strict=True):
                if p.poll() not in (None, 0):
                    raise PeagleError(f"a locust worker exited with {p.returncode}: {_tail(log)}")
            if time.monotonic() > deadline:
                raise PeagleError(f"locust did not finish in time: {_tail(logs[0])}")
            time.sleep(0.2)
        if not result.exists():
            raise PeagleError(
                f"the locust master wrote no results (exit {master.returncode}): {_tail(logs[0])}",
                remedy=f"see the logs in {workdir}",
            )
        doc = load_document(result)
        ok = True
        say(level_line(doc["levels"][0]))
        for text in doc["notes"]:
            if not text.startswith("SIMULATED"):  # incomplete run, lost records, datasets
                say(f"warning: {text}")
    finally:
        # After a normal end the workers quit on the master's word (stragglers are ended);
        # after an error or Ctrl-C everything is stopped at once.
        finished = bool(procs) and procs[0].poll() is not None
        _stop(procs, grace=10.0 if finished else 0.0)
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
    if out is not None:
        save_document(doc, Path(out))
    return doc
