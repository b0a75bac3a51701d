"""SIGTERM (a cancelled CI job, `timeout`, `kill`) and SIGHUP (a closed terminal) stop a
command as Ctrl-C does: the deploy rolls back, one line says which signal, the exit code
is 128 + its number, and the sandbox's SageMaker is left as it was.

The sandbox keeps endpoints Creating for minutes here, so the signal lands while the
deploy waits on an endpoint that exists: the costliest moment to lose track of it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sandbox import Sandbox
from tests.sandbox_helpers import leftovers, sandbox_client

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"


@pytest.fixture(scope="module")
def slow_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    import json

    sb = Sandbox(tmp_path_factory.mktemp("signals"))
    sb.cli("sandbox", "start", "--creating-seconds", "600")
    sb.state = json.loads(sb.cli("sandbox", "status", "--json").stdout)
    yield sb
    sb.cli("sandbox", "stop", check=False)


def _deploy_then(sb: Sandbox, sig: signal.Signals) -> tuple[int, str]:
    """Start `peagle --sandbox deploy`, send `sig` once the endpoint exists."""
    sm = sandbox_client(sb.url, "sagemaker")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "deploy", "gpt-oss-20b", "--yes"],
        env=sb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not sm.list_endpoints()["Endpoints"]:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the endpoint never appeared"
            time.sleep(0.1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


@pytest.mark.parametrize(
    ("sig", "code", "line"),
    [
        (signal.SIGTERM, 143, "error: terminated by SIGTERM"),
        (signal.SIGHUP, 129, "error: terminated by SIGHUP"),
        (signal.SIGINT, 130, "error: interrupted"),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_signal_mid_deploy_rolls_back_and_says_so(slow_sandbox, sig, code, line) -> None:
    returncode, err = _deploy_then(slow_sandbox, sig)
    assert returncode == code, err[-2000:]
    assert err.splitlines()[-1] == line, err[-2000:]
    assert "Traceback" not in err
    assert leftovers(lambda s: sandbox_client(slow_sandbox.url, s)) == {}


def test_a_signal_outside_the_commands_boundary_is_still_one_line(tmp_path: Path) -> None:
    """A signal that lands where `main`'s boundary is not up (while Python imports the
    command, say): the console script's own catch makes it one line and exit 143."""
    proc = subprocess.Popen(
        [sys.executable, "-c",
         "import os, signal, sys\n"
         "sys.argv = ['peagle', 'models']\n"
         "from sm_peagle.cli import app\n"
         "app.main = lambda argv=None: os.kill(os.getpid(), signal.SIGTERM) or 0\n"
         "app.run()\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip() == "error: terminated by SIGTERM"
