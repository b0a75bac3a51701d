"""The serving image built from containers/vllm/ holds the product and nothing else: no
emulator module and no vLLM plugin (a test-only monkeypatch registered in production vLLM
would change how the server samples).

The wheel is built from exactly what the Dockerfile copies into the image (its COPY lines),
with the same build backend, and read as the image's `pip install` would lay it out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "containers" / "vllm" / "Dockerfile"
EMULATOR = ROOT / "sandbox" / "peagle_sandbox"


def copied_paths(dockerfile: str) -> list[str]:
    """The repository paths the Dockerfile's COPY instructions take from the context."""
    out: list[str] = []
    for line in dockerfile.splitlines():
        m = re.match(r"\s*COPY\s+(?!--)(.+)\s+\S+\s*$", line)
        if m:
            out += m.group(1).split()
    return out


def emulator_sources() -> dict[str, str]:
    """Every emulator module's text (peagle_sandbox/**.py) -> its path, so a copy of one
    under another package or name would be found too."""
    return {
        p.read_text(): str(p.relative_to(EMULATOR.parent))
        for p in EMULATOR.rglob("*.py")
        if p.read_text().strip()
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    ctx = tmp_path_factory.mktemp("context")
    for rel in copied_paths(DOCKERFILE.read_text()):
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, ctx / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, ctx / rel)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ctx),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (path,) = out.glob("sm_peagle-*.whl")
    return zipfile.ZipFile(path)


def test_the_dockerfile_copies_the_product_only() -> None:
    assert copied_paths(DOCKERFILE.read_text()) == ["pyproject.toml", "README.md", "sm_peagle"]


def test_the_wheel_registers_no_vllm_plugin(wheel: zipfile.ZipFile) -> None:
    (ep,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(ep).decode()
    assert "vllm.general_plugins" not in text
    assert "cpu_sampling_fix" not in text
    assert "[console_scripts]" in text and "peagle = sm_peagle.cli.app:run" in text


def test_the_wheel_holds_no_emulator_module(wheel: zipfile.ZipFile) -> None:
    files = [n for n in wheel.namelist() if n.endswith(".py")]
    assert any(n == "sm_peagle/container/entrypoint.py" for n in files)  # the image's job
    assert not [n for n in files if not n.startswith("sm_peagle/")]
    # The emulator's modules (server, harness, engine host, tiny models, the vLLM plugin)
    # are not in the product under any name; nor does any product module name the emulator
    # package in an import (the deprecated `sm_peagle.testing` paths find it by entry point).
    emulator = emulator_sources()
    leaked = [(n, emulator[t]) for n in files if (t := wheel.read(n).decode()) in emulator]
    assert leaked == [], leaked
    importing = [
        n
        for n in files
        if re.search(r"^\s*(from|import)\s+peagle_sandbox", wheel.read(n).decode(), re.M)
    ]
    assert importing == [], importing
    assert not [n for n in wheel.namelist() if "requirements/" in n]


def test_the_checks_can_fail() -> None:
    dockerfile = "FROM x\nCOPY pyproject.toml README.md /src/\nCOPY --from=a b c\nCOPY sandbox /s\n"
    assert copied_paths(dockerfile) == ["pyproject.toml", "README.md", "sandbox"]
    paths = set(emulator_sources().values())
    assert {"peagle_sandbox/server.py", "peagle_sandbox/vllm_engine/cpu_sampling_fix.py"} <= paths
