"""The examples run, for real, against the sandbox: the notebook (nbclient), the
bring-your-own-drafter script, and every peagle command in the CI workflow example."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sandbox_env(tmp_path, monkeypatch):
    """A private sandbox state dir for this test; stopped (and checked gone) afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(PEAGLE_STATE_DIR=str(tmp_path / "state"), PEAGLE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PEAGLE_SANDBOX_URL", None)
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    yield env
    from peagle_sandbox import manager

    info = manager.read_state()
    manager.stop()
    if info is not None:
        assert not manager.pid_alive(info.pid)


def peagle(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_quickstart_notebook_runs(sandbox_env):
    import nbclient  # in the [test] extra: missing is a broken install, not a skip
    import nbformat

    nb = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "parallel_drafting" in outputs and "InService p-eagle K = 3" in outputs
    assert "output tok/s" in outputs and "quickstart-demo is deleted" in outputs


def test_bring_your_own_drafter_script(sandbox_env):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "bring_your_own_drafter.py")],
        env=sandbox_env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pass drafter.mask_hidden" in proc.stdout
    assert (
        "drafter channel eagle <- s3://sagemaker-us-east-1-123456789012/peagle/drafters/"
        in proc.stdout
    )
    assert "deleted byo-drafter-demo" in proc.stdout
    ls = peagle(sandbox_env, "--sandbox", "ls", "--json")
    assert ls.returncode == 0 and ls.stdout.strip() == "[]"


def test_ci_workflow_commands_run_on_the_sandbox(sandbox_env, tmp_path):
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "peagle-deploy.yml").read_text())
    commands = [
        step["run"]
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if step.get("run", "").startswith("peagle ")
    ]
    assert [c.split()[1] for c in commands] == ["plan", "diff", "apply", "invoke"]
    (tmp_path / "deploy").mkdir()
    shutil.copy(
        ROOT / "templates" / "specs" / "gpt-oss-20b-p-eagle.yaml",
        tmp_path / "deploy" / "gpt-oss-20b.yaml",
    )
    env = {**sandbox_env, "PEAGLE_SANDBOX": "1"}  # the global switch, as an env var
    for command in commands:
        proc = subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", *shlex.split(command)[1:]],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, f"{command}: {proc.stderr}"
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "sm_peagle.cli",
            "apply",
            "-f",
            "deploy/gpt-oss-20b.yaml",
            "--yes",
            "--json",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert '"action": "noop"' in again.stdout
    assert peagle(env, "delete", "peagle-gpt-oss-20b-p-eagle", "--yes").returncode == 0
