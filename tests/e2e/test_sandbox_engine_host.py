"""The `--engine vllm` sandbox host end to end with a stand-in engine (no vLLM needed):
the real sandbox server, the real `peagle` CLI and peagle's real container entrypoint, with
the engine venv's `vllm` routed to `tests/integration/fake_vllm.py`.

Covers the state transitions (Creating until /ping, InService; Failed with the engine's
own error line and a rollback), invocations forwarded to the engine's /invocations, the
engine label, DeleteEndpoint and sandbox stop ending the process group, CLI errors without
an engine, and `tiny-llama` on the SIMULATED engine. The real engine's version of these
runs in `tests/conformance/test_sandbox_engine_*.py`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from peagle_sandbox.procs import group_alive
from peagle_sandbox.seed_tiny import _placeholders
from tests.sandbox_helpers import leftovers, sandbox_client

pytestmark = pytest.mark.e2e
FAKE = Path(__file__).resolve().parents[1] / "integration" / "fake_vllm.py"
NAME = "peagle-tiny-llama-p-eagle"


def fake_engine_home(root: Path) -> Path:
    """An engine home whose venv python runs the real peagle (main venv), except that
    peagle's vLLM launcher runs the stand-in engine."""
    home = root / "engine"
    python = home / "venv-0.31.0" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "peagle_sandbox.vllm_engine.launcher" ]; then\n'
        f'  shift 2; exec "{sys.executable}" "{FAKE}" "$@"\nfi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    python.chmod(0o755)
    models = home / "models"
    for key, body in _placeholders().items():
        name = key.replace("heads/", "", 1)
        (models / name).parent.mkdir(parents=True, exist_ok=True)
        (models / name).write_bytes(body)
    (models / "manifest.json").write_text("{}")
    return home


REPO = Path(__file__).resolve().parents[2]


class Cli:
    """The `peagle` CLI in subprocesses, isolated in `root`. `timeout` bounds each call: a
    real engine can take minutes to start on a busy 2-CPU machine."""

    def __init__(self, root: Path, engine_home: Path | None, timeout: float = 120) -> None:
        self.timeout = timeout
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        self.env.update(
            HOME=str(root),
            PEAGLE_STATE_DIR=str(root / "state"),
            PEAGLE_CACHE_DIR=str(root / "cache"),
            PEAGLE_POLL_SECONDS="0.2",
            PEAGLE_ENGINE_HOME=str(engine_home or root / "no-engine"),
            # This checkout's product and sandbox, whatever the venv has installed.
            PYTHONPATH=os.pathsep.join(str(REPO / d) for d in ("", "sandbox")),
            COLUMNS="250",
        )

    def __call__(self, *args: str, code: int | None = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=self.timeout,
        )
        if code is not None:
            assert proc.returncode == code, f"peagle {' '.join(args)}\n{proc.stderr}{proc.stdout}"
        return proc

    def state(self) -> dict[str, Any]:
        return json.loads((Path(self.env["PEAGLE_STATE_DIR"]) / "sandbox.json").read_text())

    def client(self, service: str) -> Any:
        return sandbox_client(self.state()["url"], service)

    def engines(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.state()['url']}/_peagle/engines", timeout=5) as r:
            return json.loads(r.read())["engines"]


def assert_nothing_left(cli: Cli) -> None:
    """After a delete or a rollback: no engine the sandbox knows, no process under it, no
    engine process-group file, and no resource of any kind (`sandbox_helpers.leftovers`)."""
    assert cli.engines() == [] and descendants(cli.state()["pid"]) == []
    assert not list(Path(cli.env["PEAGLE_STATE_DIR"], "engines").glob("*.pgid"))
    assert leftovers(cli.client) == {}


def port_free(port: int) -> bool:
    """Nothing listens there any more (TIME_WAIT leftovers of closed connections do not
    count: a server rebinds with SO_REUSEADDR)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def descendants(pid: int) -> list[int]:
    """Live processes below `pid` (Linux /proc): the engines a sandbox server started."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():  # self, thread-self, sys, ...
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError, ValueError):
            continue
        if fields[0] != "Z":
            parents[int(d.name)] = int(fields[1])
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        out += kids
        todo += kids
    return out


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("engine-host")
    cli = Cli(root, fake_engine_home(root))
    out = cli("sandbox", "start", "--engine", "vllm")
    assert "engine: vllm 0.31.0 (CPU, tiny model)" in out.stderr
    yield cli
    cli("sandbox", "stop", code=None)


def test_deploy_waits_for_ping_then_serves_through_invocations(real: Cli) -> None:
    out = real("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
    assert f"{NAME} is InService" in out.stdout
    assert "served by the sandbox's vllm 0.31.0 (CPU, tiny model) engine" in out.stderr
    [engine] = real.engines()
    assert engine["ready"] and group_alive(engine["pid"])
    inv = real("--sandbox", "invoke", NAME, "hello", "--json")
    doc = json.loads(inv.stdout)
    assert doc["text"] == "fake vllm tokens" and doc["usage"]["completion_tokens"] == 3
    logs = real("--sandbox", "logs", NAME).stdout
    assert "--port 8080" in logs and "--host 127.0.0.1" in logs  # the entrypoint's argv
    assert "additional-model-data-sources/eagle" in logs and "opt-ml" in logs
    assert "flags the sandbox adds or overrides" in logs
    assert "Avg prompt throughput" not in logs  # no SIMULATED lines for a real engine
    real("--sandbox", "delete", NAME, "--yes")
    assert real.engines() == [] and descendants(real.state()["pid"]) == []
    assert not group_alive(engine["pid"]) and port_free(engine["port"])


def test_an_engine_that_exits_fails_the_endpoint_with_its_error(real: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: tiny-llama\nspeculative: {mode: p-eagle, num_speculative_tokens: 3}\n"
        "container: {engine_args: {max_model_len: 4096}}\n"
    )
    out = real("--sandbox", "deploy", "--file", str(spec), "--yes", code=1)
    assert "User-specified max_model_len (4096) is greater than" in out.stderr
    assert "rolling back" in out.stderr
    assert real.engines() == [] and descendants(real.state()["pid"]) == []
    ls = json.loads(real("--sandbox", "ls", "--json").stdout)
    assert not any(r.get("endpoint") == NAME for r in (ls if isinstance(ls, list) else []))


def test_stop_ends_every_engine(tmp_path: Path) -> None:
    cli = Cli(tmp_path, fake_engine_home(tmp_path))
    cli("sandbox", "start", "--engine", "vllm")
    cli("--sandbox", "deploy", "tiny-llama", "--mode", "baseline", "--yes")
    [engine] = cli.engines()
    cli("sandbox", "stop")
    assert not group_alive(engine["pid"]) and port_free(engine["port"])
    assert not list((tmp_path / "state" / "engines").glob("*.pgid"))


def test_vllm_engine_without_an_install_is_one_line_naming_the_command(tmp_path: Path) -> None:
    cli = Cli(tmp_path, None)
    for args in (
        ("sandbox", "start", "--engine", "vllm"),
        ("--sandbox-engine", "vllm", "ls"),
    ):
        out = cli(*args, code=2)
        assert "peagle sandbox install-engine" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    cli.env["PEAGLE_SANDBOX_ENGINE"] = "vllm"
    assert "install-engine" in cli("--sandbox", "ls", code=2).stderr
    assert "unknown sandbox engine" in cli("sandbox", "start", "--engine", "gpu", code=2).stderr
    args = ("sandbox", "install-engine", "--vllm-version", "0.1.0", "--home", str(tmp_path))
    assert "unsupported --vllm-version" in cli(*args, code=2).stderr


def test_tiny_llama_deploys_on_the_simulated_engine_and_says_so(tmp_path: Path) -> None:
    cli = Cli(tmp_path, None)  # no engine home: the sandbox seeds labelled placeholders
    try:
        out = cli("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
        assert "served by the sandbox's SIMULATED engine" in out.stderr
        assert "talking to: SANDBOX (SIMULATED) at http://127.0.0.1:" in out.stderr
        inv = cli("--sandbox", "invoke", NAME, "hello", "--max-tokens", "8", "--json")
        assert json.loads(inv.stdout)["usage"]["completion_tokens"] == 8
    finally:
        cli("sandbox", "stop", code=None)
    refused = cli("deploy", "tiny-llama", "--yes", code=2)
    assert "sandbox-only model" in refused.stderr
