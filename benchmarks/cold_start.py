"""Cold-start wall time of the peagle CLI, side by side with `python -c "import boto3"`.

The targets (issue 35): `peagle plan gpt-oss-20b --json` takes at most 1.0x the time of
`import boto3`, and `peagle --help` at most 0.6x. Each command is measured in pairs with
`import boto3` (boto3 then the command, then the command then boto3, alternating, so
that drift on a shared machine hits both sides of a pair alike); a ratio is the
command's median over boto3's median in its own pairs. Every run is a fresh process of
this interpreter (the console script is run by `sys.executable`, so a pyenv/asdf shim
adds nothing), with `PYTHONDONTWRITEBYTECODE` removed and one untimed warm-up run each
first: .pyc files, the OS page cache and peagle's shapes cache are warm, which is what a
user sees from the second invocation on.

    python benchmarks/cold_start.py                      # print a markdown table
    python benchmarks/cold_start.py --pairs 30
    python benchmarks/cold_start.py --profile 12         # and -X importtime top lists
    python benchmarks/cold_start.py --write-readme docs/benchmarks.md

`--write-readme` replaces the text between `<!-- bench:cold-start:start -->` and
`<!-- bench:cold-start:end -->`; a file without both markers is left untouched.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from collections import defaultdict
from pathlib import Path

from readme_block import markers, replace_block

START, END = markers("cold-start")
BOTO3 = ('python -c "import boto3"', ["-c", "import boto3"])
# label, arguments after the console script, target ratio to `import boto3`
TARGETS = (
    ("peagle --help", ["--help"], 0.6),
    ("peagle plan gpt-oss-20b --json", ["plan", "gpt-oss-20b", "--json"], 1.0),
)


def console_script(name: str = "peagle") -> Path:
    """The entry-point script installed for this interpreter."""
    exe = name + (".exe" if os.name == "nt" else "")
    for d in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(d) / exe
        if candidate.is_file():
            return candidate
    raise SystemExit(f"no {exe} next to {sys.executable}: pip install -e . first")


def child_env() -> dict[str, str]:
    """This environment, but .pyc files are read and written as a user's would be."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far; 0 where the
    platform does not say (Windows)."""
    try:
        import resource
    except ImportError:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds from spawn to exit, CPU seconds) of `python ARGV`."""
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr!r}")
    return elapsed, children_cpu() - cpu


def measure(pairs: int) -> list[dict[str, object]]:
    """For each target: its median, boto3's median over the same pairs, and the ratio."""
    env = child_env()
    script = str(console_script())
    commands = [(label, [script, *args], target) for label, args, target in TARGETS]
    run_once(BOTO3[1], env)  # warm-up: .pyc files, page cache, peagle's shapes cache
    for _, argv, _ in commands:
        run_once(argv, env)
    rows = []
    for label, argv, target in commands:
        mine, boto3 = [], []
        for i in range(pairs):
            if i % 2 == 0:
                boto3.append(run_once(BOTO3[1], env))
                mine.append(run_once(argv, env))
            else:
                mine.append(run_once(argv, env))
                boto3.append(run_once(BOTO3[1], env))
        wall, cpu = (statistics.median(s[k] for s in mine) for k in (0, 1))
        boto3_wall, boto3_cpu = (statistics.median(s[k] for s in boto3) for k in (0, 1))
        rows.append(
            {
                "label": label,
                "median": wall * 1000,
                "boto3": boto3_wall * 1000,
                "ratio": wall / boto3_wall,
                # CPU time moves less than wall time when other work shares the CPUs
                "cpu_ratio": cpu / boto3_cpu if boto3_cpu else None,
                "target": target,
            }
        )
    return rows


def load_average() -> str:
    """The 1-minute load average (other work on the machine), or "unknown"."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):  # not on Windows
        return "unknown"


def table(rows: list[dict[str, object]], pairs: int, load: tuple[str, str]) -> str:
    lines = [
        "| command | median | `import boto3` (same pairs) | ratio | target | met | CPU ratio |",
        "|---|---:|---:|---:|---:|---|---:|",
        *(
            f"| `{r['label']}` | {r['median']:.0f} ms | {r['boto3']:.0f} ms | "
            f"{r['ratio']:.2f}x | {r['target']:.1f}x | "
            f"{'yes' if r['ratio'] <= r['target'] else 'no'} | "  # type: ignore[operator]
            f"{'n/a' if r['cpu_ratio'] is None else format(r['cpu_ratio'], '.2f') + 'x'} |"
            for r in rows
        ),
        "",
        f"Medians of {pairs} alternating pairs per command (boto3 first in odd pairs, last "
        f"in even ones), fresh processes after one warm-up run each (warm .pyc files, OS "
        f"page cache and peagle shapes cache); Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{load[0]} before and {load[1]} after. The ratio and target are wall time; the "
        f"CPU ratio (user + system time of the same runs) moves less when other work "
        f"shares the CPUs. Measured by `benchmarks/cold_start.py`.",
    ]
    return "\n".join(lines)


def importtime(args: list[str]) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) for every import of one `-X importtime` run."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(console_script()), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((name.strip(), int(own), int(cumulative)))
    return rows


def profile(top: int) -> str:
    """Per command: self time summed by top-level package, and the slowest sm_peagle
    modules by self time (one run each: an outline of where the time goes, not a figure)."""
    out = []
    for label, args, _ in TARGETS:
        rows = importtime(args)
        by_package: dict[str, int] = defaultdict(int)
        for name, own, _ in rows:
            by_package[name.split(".")[0]] += own
        total = sum(by_package.values())
        packages = sorted(by_package.items(), key=lambda kv: -kv[1])[:top]
        ours = sorted((r for r in rows if r[0].startswith("sm_peagle")), key=lambda r: -r[1])
        out += [
            f"`python -X importtime {label.replace('peagle', 'PEAGLE_SCRIPT', 1)}`: "
            f"{total / 1000:.0f} ms of imports",
            "",
            "| package (self time, summed) | ms |",
            "|---|---:|",
            *(f"| {name} | {us / 1000:.1f} |" for name, us in packages),
            "",
            "| sm_peagle module | self ms | cumulative ms |",
            "|---|---:|---:|",
            *(f"| {n} | {s / 1000:.1f} | {c / 1000:.1f} |" for n, s, c in ours[:top]),
            "",
        ]
    return "\n".join(out)


def write_readme(path: Path, block: str) -> bool:
    return replace_block(path, "cold-start", block)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=15, help="alternating pairs per command")
    parser.add_argument(
        "--profile", type=int, metavar="N", help="also print -X importtime top-N lists"
    )
    parser.add_argument("--write-readme", type=Path, help="file to update between markers")
    args = parser.parse_args(argv)
    if args.pairs < 10:
        parser.error("--pairs must be at least 10 (a median of fewer says little)")

    before = load_average()
    rows = measure(args.pairs)
    block = table(rows, args.pairs, (before, load_average()))
    print(block)
    if args.profile:
        print("\n" + profile(args.profile))
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
