"""`eval "$(peagle sandbox env)"` points another shell at the running sandbox: the AWS
endpoint and fake keys for any AWS tool, and `PEAGLE_TARGET=sandbox`, so a `peagle` run
there knows, through the plugin contract, that it talks to the sandbox (its label) and
never to AWS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

# What the eval'd shell's peagle sees: its target, as the contract reports it.
_ASK = (
    "import json; from sm_peagle import plugins; s = plugins.current_target(); "
    "print(json.dumps(None if s is None else [s.name, s.url, s.label]))"
)


def _peagle(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_env_points_another_shell_at_the_sandbox(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    env.update(PEAGLE_STATE_DIR=str(tmp_path / "state"), AWS_PROFILE="someone-real")
    no_sandbox = _peagle(env, "sandbox", "env")
    assert no_sandbox.returncode == 1 and no_sandbox.stdout == ""
    assert no_sandbox.stderr == "error: no sandbox is running (fix: `peagle sandbox start`)\n"
    started = _peagle(env, "sandbox", "start", "--json")
    assert started.returncode == 0, started.stderr
    url = json.loads(started.stdout)["url"]
    try:
        printed = _peagle(env, "sandbox", "env")
        assert printed.returncode == 0, printed.stderr
        lines = printed.stdout.splitlines()
        assert "unset AWS_PROFILE" in lines  # a profile would bypass the fake keys
        for line in (
            "export PEAGLE_TARGET=sandbox",
            f"export PEAGLE_SANDBOX_URL={url}",
            f"export AWS_ENDPOINT_URL={url}",
            "export AWS_ACCESS_KEY_ID=peagle-sandbox",
        ):
            assert line in lines, (line, lines)
        shell = subprocess.run(
            ["bash", "-c", f'eval "$({sys.executable} -m sm_peagle.cli sandbox env)" && '
             f'{sys.executable} -c "{_ASK}"'],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert shell.returncode == 0, shell.stderr
        assert json.loads(shell.stdout) == ["sandbox", url, "SANDBOX (SIMULATED)"]
        # Without the eval, the same shell talks to AWS.
        plain = subprocess.run(
            [sys.executable, "-c", _ASK], env=env, capture_output=True, text=True, timeout=60
        )
        assert json.loads(plain.stdout) is None
    finally:
        stopped = _peagle(env, "sandbox", "stop")
    assert stopped.returncode == 0 and stopped.stdout.startswith("stopped sandbox pid ")
