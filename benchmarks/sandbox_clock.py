"""The sandbox clock's acceptance figure: a deploy whose Creating is 15 sandbox minutes, on a
clock rate of 60, returns InService in about 15 real seconds, and DescribeEndpoint's
`CreationTime` and `LastModifiedTime` differ by 15 sandbox minutes.

Starts its own SIMULATED sandbox (a temporary state directory, `--clock-rate 60
--creating-seconds 900`), runs `peagle --sandbox deploy gpt-oss-20b --yes --json` a few
times (each under a new name), and reports per run: the deploy's real wall time, the time
from the CreateEndpoint to InService on the sandbox clock (LastModifiedTime -
CreationTime), and the poll interval the deploy used. The suite asserts the timestamps
(tests/e2e/test_sandbox_clock.py), never a wall time; this script measures it.

    python benchmarks/sandbox_clock.py                  # print a markdown table
    python benchmarks/sandbox_clock.py --runs 3 --write-readme docs/benchmarks.md

`--write-readme` replaces the text between `<!-- bench:sandbox-clock:start -->` and
`<!-- bench:sandbox-clock:end -->`; a file without both markers is left untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from readme_block import replace_block

BLOCK = "sandbox-clock"
RATE, CREATING = 60.0, 900.0
POLL = "1"  # real seconds between the deploy's polls (PEAGLE_POLL_SECONDS)


def peagle(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "sm_peagle.cli", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)


def describe(env: dict[str, str], url: str, name: str) -> dict:
    import boto3

    sm = boto3.client(
        "sagemaker",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="peagle-sandbox",
        aws_secret_access_key="peagle-sandbox",
    )
    return sm.describe_endpoint(EndpointName=name)


def measure(runs: int) -> list[dict[str, float]]:
    state = tempfile.mkdtemp(prefix="peagle-clock-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    env |= {"PEAGLE_STATE_DIR": state, "PEAGLE_POLL_SECONDS": POLL}
    started = peagle(env, "sandbox", "start", "--clock-rate", str(RATE), "--creating-seconds",
                     str(CREATING), "--json")  # fmt: skip
    url = json.loads(started.stdout)["url"]
    out = []
    try:
        for i in range(runs):
            name = f"clock-bench-{i}"
            t0 = time.monotonic()
            peagle(env, "--sandbox", "deploy", "gpt-oss-20b", "--name", name, "--yes", "--json")
            wall = time.monotonic() - t0
            ep = describe(env, url, name)
            sandbox = (ep["LastModifiedTime"] - ep["CreationTime"]).total_seconds()
            out.append({"wall_s": wall, "creating_sandbox_s": sandbox})
            peagle(env, "--sandbox", "delete", name, "--yes")
    finally:
        peagle(env, "sandbox", "stop")
    return out


def table(results: list[dict[str, float]]) -> str:
    walls = [r["wall_s"] for r in results]
    creating = [r["creating_sandbox_s"] for r in results]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return "\n".join(
        [
            "| | runs | median | min | max | expected |",
            "|---|---:|---:|---:|---:|---:|",
            f"| deploy wall time (real s) | {len(walls)} | {statistics.median(walls):.1f} | "
            f"{min(walls):.1f} | {max(walls):.1f} | about {CREATING / RATE:.0f} |",
            f"| LastModifiedTime - CreationTime (sandbox s) | {len(creating)} | "
            f"{statistics.median(creating):.0f} | {min(creating):.0f} | {max(creating):.0f} | "
            f"{CREATING:.0f} |",
            "",
            f"Clock rate {RATE:g}, `--creating-seconds {CREATING:g}` (15 sandbox minutes), "
            f"PEAGLE_POLL_SECONDS={POLL}; the deploy's wall time also holds its own requests "
            "before CreateEndpoint (model, config, checks) and up to one poll after InService. "
            f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
            f"{load:.2f} at the end; {datetime.now():%Y-%m-%d}. "
            "Measured by `benchmarks/sandbox_clock.py`.",
        ]
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--write-readme", type=Path)
    args = p.parse_args()
    text = table(measure(args.runs))
    print(text)
    if args.write_readme:
        replace_block(args.write_readme, BLOCK, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
