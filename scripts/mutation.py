"""Mutation testing of peagle's core modules with mutmut (a maintainer tool, not CI).

    pip install -e ".[mutation]"
    python scripts/mutation.py                       # every core module
    python scripts/mutation.py --module sse --module chunks --survivors

mutmut 3 rewrites the sources in place under `mutants/`, so this script runs it in a
scratch copy of the work tree (tracked and untracked, not ignored files), one per module,
kept between runs (`--workdir`, default /tmp/peagle-mutation/<module>): mutmut reuses a
result while the function it mutated and the tests are unchanged. Each mutant runs only
the fast unit tests below that cover the mutated function. The score of a module is
(killed + timed out) / (mutants - excluded); `tests/mutation_exclusions.txt` lists each
excluded equivalent mutant, one per line, with the reason. Exit code 1 when a module
scores under --min (default 90)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXCLUSIONS = ROOT / "tests" / "mutation_exclusions.txt"

# short name -> (source file, the unit tests that exercise it)
CORE: dict[str, tuple[str, tuple[str, ...]]] = {
    "speculative": (
        "sm_peagle/vllm/speculative.py",
        ("tests/unit/test_speculative.py", "tests/unit/test_speculative_rules.py"),
    ),
    "plan_checks": (
        "sm_peagle/planning/steps/checks.py",
        ("tests/unit/test_fit.py", "tests/unit/test_plan_checks.py"),
    ),
    "fit": ("sm_peagle/planning/steps/fit.py", ("tests/unit/test_fit.py",)),
    "sse": (
        "sm_peagle/runtime/sse.py",
        ("tests/unit/test_sse_stream.py", "tests/unit/test_sse_edges.py"),
    ),
    "chunks": (
        "sm_peagle/runtime/chunks.py",
        ("tests/unit/test_sse_stream.py", "tests/unit/test_chunk_metrics.py"),
    ),
    "eventstream_decode": (
        "sm_peagle/runtime/eventstream_decode.py",
        ("tests/unit/test_eventstream_decode.py", "tests/unit/test_eventstream_rules.py"),
    ),
    "metrics": (
        "sm_peagle/benchmarking/metrics.py",
        ("tests/unit/test_bench_metrics.py", "tests/unit/test_bench_metrics_rules.py"),
    ),
    "aws_shapes": (
        "sm_peagle/planning/steps/aws_shapes.py",
        ("tests/unit/test_request_shapes.py", "tests/unit/test_request_shape_rules.py"),
    ),
    "drafter_check": (
        "sm_peagle/drafter/check.py",
        (
            "tests/unit/test_drafter_check.py",
            "tests/unit/test_fidelity_drafter.py",
            "tests/unit/test_drafter_check_rules.py",
            "tests/unit/test_drafter_heads.py",
        ),
    ),
    "entrypoint": (
        "sm_peagle/container/entrypoint.py",
        (
            "tests/unit/test_container_entrypoint.py",
            "tests/unit/test_fidelity_entrypoint.py",
            "tests/unit/test_entrypoint_rules.py",
        ),
    ),
}

KILLED = {"killed", "timeout", "caught by type check", "segfault"}
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests"}
STATUS.update({34: "skipped", 35: "suspicious", 36: "timeout", 37: "caught by type check"})
STATUS.update({-24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout"})
STATUS.update({-11: "segfault", -9: "segfault"})


def load_exclusions(path: Path = EXCLUSIONS) -> dict[str, str]:
    """`mutant-name  reason` per line; '#' starts a comment. A reason is required."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path.name}:{n}: {name} is excluded without a reason")
        out[name] = reason.strip()
    return out


def sync_tree(workdir: Path) -> None:
    """Copy the work tree's files (not the ignored ones) into workdir, changed ones only."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, names):
        rel = raw.decode()
        src, dst = ROOT / rel, workdir / rel
        if not src.is_file():
            continue
        if dst.exists() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def selected_tests(names: list[str]) -> list[str]:
    return sorted({t for n in names for t in CORE[n][1] if (ROOT / t).exists()})


def baseline_failures(workdir: Path, tests: list[str]) -> list[str]:
    """mutmut needs a green baseline: tests already failing in the tree (someone's work in
    progress) are deselected, and said so."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *tests],
        cwd=workdir,
        capture_output=True,
        text=True,
    ).stdout
    failed = [ln.split()[1] for ln in out.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    for test in failed:
        print(f"baseline failure, deselected: {test}", file=sys.stderr)
    return failed


def write_config(workdir: Path, names: list[str], deselect: list[str]) -> None:
    sources = [CORE[n][0] for n in names]
    tests = selected_tests(names)
    extra = ["-p", "no:cacheprovider", "-q", "-x"] + [f"--deselect={t}" for t in deselect]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    text += "\n[tool.mutmut]\n" + "\n".join(
        [
            'source_paths = ["sm_peagle"]',
            f"also_copy = {json.dumps(also_copy(workdir))}",
            f"only_mutate = {json.dumps(sources)}",
            f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
            f"pytest_add_cli_args = {json.dumps(extra)}",
            "use_git_change_detection = false",
            "",
        ]
    )
    (workdir / "pyproject.toml").write_text(text, encoding="utf-8")


def also_copy(workdir: Path) -> list[str]:
    """Tests read templates/, examples/, ... by relative path: mutmut copies them too."""
    skip = {"mutants", "sm_peagle", "tests", ".git"}
    return sorted(p.name for p in workdir.iterdir() if p.name not in skip and p.is_dir())


def statuses(workdir: Path, source: str) -> dict[str, str]:
    meta = workdir / "mutants" / (source + ".meta")
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return {
        k: STATUS.get(v, "not checked" if v is None else "suspicious") for k, v in codes.items()
    }


def report(root: Path, names: list[str], show: bool, minimum: float) -> int:
    excluded = load_exclusions()
    worst = 100.0
    print(f"{'module':<20}{'mutants':>8}{'killed':>8}{'excluded':>9}{'survived':>9}{'score':>8}")
    for n in names:
        st = statuses(root / n, CORE[n][0])
        ex = [k for k in st if k in excluded]
        live = {k: v for k, v in st.items() if k not in excluded}
        killed = sum(v in KILLED for v in live.values())
        score = 100.0 * killed / len(live) if live else 100.0
        worst = min(worst, score)
        left = len(live) - killed
        print(f"{n:<20}{len(st):>8}{killed:>8}{len(ex):>9}{left:>9}{score:>7.1f}%")
        if show:
            for k, v in sorted(live.items()):
                if v not in KILLED:
                    print(f"    {v:<12} {k}")
    stale = [k for k in excluded if not any(k in statuses(root / n, CORE[n][0]) for n in CORE)]
    if stale and set(names) == set(CORE):
        print(f"exclusions naming no mutant (remove them): {', '.join(stale)}")
    return 0 if worst >= minimum else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--module", action="append", choices=sorted(CORE), help="default: all")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/peagle-mutation"))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    p.add_argument("--report-only", action="store_true", help="do not run; report the last run")
    p.add_argument("--min", type=float, default=90.0, help="lowest acceptable score, percent")
    args = p.parse_args(argv)
    names = args.module or list(CORE)
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or "mutmut"
    for n in [] if args.report_only else names:
        workdir = args.workdir / n
        workdir.mkdir(parents=True, exist_ok=True)
        sync_tree(workdir)
        write_config(workdir, [n], baseline_failures(workdir, selected_tests([n])))
        print(f"== {n}: {CORE[n][0]}", flush=True)
        run = subprocess.run([mutmut, "run", "--max-children", str(args.jobs)], cwd=workdir)
        if run.returncode not in (0, 1):
            return run.returncode
    return report(args.workdir, names, args.survivors, args.min)


if __name__ == "__main__":
    sys.exit(main())
