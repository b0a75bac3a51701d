"""Cold-start wall time of the peagle CLI, next to `python -c "import boto3"` for scale.

Each command runs in a fresh process N times (default 15), after one untimed warm-up
run each, so the OS page cache and peagle's on-disk shapes cache are warm: the numbers
are what a user sees from the second invocation on. Runs are interleaved (A B C A B C …)
so that background drift hits every command alike. The console script is the one
installed next to this interpreter (not a pyenv/asdf shim, which adds its own start-up).

    python benchmarks/cold_start.py                      # print a markdown table
    python benchmarks/cold_start.py --runs 30
    python benchmarks/cold_start.py --write-readme README.md

`--write-readme` replaces the text between `<!-- bench:cold-start:start -->` and
`<!-- bench:cold-start:end -->`; a file without both markers is left untouched.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from readme_block import markers, replace_block

START, END = markers("cold-start")


def console_script(name: str = "peagle") -> Path:
    """The entry-point script installed for this interpreter."""
    exe = name + (".exe" if os.name == "nt" else "")
    for d in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(d) / exe
        if candidate.is_file():
            return candidate
    raise SystemExit(f"no {exe} next to {sys.executable}: pip install -e . first")


def commands() -> list[tuple[str, list[str]]]:
    peagle = str(console_script())
    return [
        ("peagle --help", [peagle, "--help"]),
        ("peagle plan gpt-oss-20b --json", [peagle, "plan", "gpt-oss-20b", "--json"]),
        ('python -c "import boto3"', [sys.executable, "-c", "import boto3"]),
    ]


def run_once(argv: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr!r}")
    return elapsed


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0-100)."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def measure(runs: int) -> list[tuple[str, float, float]]:
    cmds = commands()
    for _, argv in cmds:  # warm-up: page cache, .pyc files, peagle's shapes cache
        run_once(argv)
    samples: dict[str, list[float]] = {label: [] for label, _ in cmds}
    for _ in range(runs):
        for label, argv in cmds:
            samples[label].append(run_once(argv))
    return [
        (label, statistics.median(s) * 1000, percentile(s, 90) * 1000)
        for label, s in samples.items()
    ]


def table(rows: list[tuple[str, float, float]], runs: int) -> str:
    lines = [
        "| command | median | p90 |",
        "|---|---:|---:|",
        *(f"| `{label}` | {median:.0f} ms | {p90:.0f} ms |" for label, median, p90 in rows),
        "",
        f"{runs} runs each in fresh processes after one warm-up run per command (warm OS "
        f"page cache and warm peagle shapes cache); Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}. Measured by `benchmarks/cold_start.py`.",
    ]
    return "\n".join(lines)


def write_readme(path: Path, block: str) -> bool:
    return replace_block(path, "cold-start", block)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command")
    parser.add_argument("--write-readme", type=Path, help="README to update between markers")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    rows = measure(args.runs)
    block = table(rows, args.runs)
    print(block)
    if args.write_readme is not None:
        if write_readme(args.write_readme, block):
            print(f"\nupdated {args.write_readme}", file=sys.stderr)
        else:
            print(
                f"\n{args.write_readme}: no {START} … {END} markers (or no file); not written",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
