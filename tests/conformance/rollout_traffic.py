"""Rollouts on the real engine (issue 38): an update with a DeploymentConfig running in the
background while the test sends traffic to both fleets and moves the sandbox clock through
the bakes.

In the sandbox one real engine stands for every instance of a fleet: during a canary the
old engine serves the old fleet's share of the invocations and a second engine, started for
the new endpoint config, serves the rest (the sandbox's harness draws each invocation's
fleet by the step's share; the response header `x-peagle-endpoint-config` names the config
that served it). Each engine writes its own SpecDecoding lines to the endpoint's log group,
so the speculation metric mixes the two fleets as it does on SageMaker.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.conformance.engine_proc import STATS_INTERVAL_S
from tests.conformance.health_traffic import PERIOD_S, advance, sandbox_epoch, spec_events
from tests.e2e.test_sandbox_engine_host import Cli

CONFIG_HEADER = "x-peagle-endpoint-config"


def start(cli: Cli, *args: str) -> subprocess.Popen[str]:
    """`peagle ARGS` in the background (an update that watches its rollout)."""
    return subprocess.Popen(
        [sys.executable, "-m", "sm_peagle.cli", *args],
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sandbox_env(cli: Cli) -> dict[str, str]:
    """What `peagle sandbox env` exports, for a child's SDK (as a user's script gets it)."""
    env = {}
    for line in cli("sandbox", "env").stdout.splitlines():
        if line.startswith("export "):
            key, _, value = shlex.split(line[len("export ") :])[0].partition("=")
            env[key] = value
    return env


def start_python(cli: Cli, script: str, *args: str) -> subprocess.Popen[str]:
    """`python -c SCRIPT ARGS` in the background with the sandbox's SDK environment."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env={**cli.env, **sandbox_env(cli)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 300.0) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def pending_status(cli: Cli, name: str) -> str | None:
    """The new fleet's VariantStatus now (Creating, ActivatingTraffic, Baking), or None when
    no deployment is pending."""
    desc = cli.client("sagemaker").describe_endpoint(EndpointName=name)
    pending = desc.get("PendingDeploymentSummary")
    if not pending:
        return None
    statuses = pending["ProductionVariants"][0].get("VariantStatus") or [{}]
    return statuses[-1].get("Status")


def wait_for_bake(cli: Cli, name: str, proc: subprocess.Popen[str], timeout: float = 400.0) -> None:
    """Until the new fleet bakes: its engine started (bounded: a start takes 20-60 s on two
    busy CPUs) and the first share of the traffic reaches it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the update ended before its first bake:\n{err}{out}")
        if pending_status(cli, name) == "Baking":
            return
        time.sleep(1.0)
    proc.kill()
    raise AssertionError(f"{name}'s new fleet did not start baking within {timeout:.0f} s")


def invoke_split(cli: Cli, name: str, n: int = 8, max_tokens: int = 32) -> Counter[str]:
    """`n` greedy invocations, two at a time; how many each endpoint config served."""
    runtime = cli.client("sagemaker-runtime")

    def one(i: int) -> str:
        body = {"prompt": f"Tell me about the number {i}.", "max_tokens": max_tokens,
                "temperature": 0.0}  # fmt: skip
        r = runtime.invoke_endpoint(
            EndpointName=name, Body=json.dumps(body), ContentType="application/json"
        )
        r["Body"].read()
        return str(r["ResponseMetadata"]["HTTPHeaders"][CONFIG_HEADER])

    with ThreadPoolExecutor(2) as pool:
        return Counter(pool.map(one, range(n)))


def bake_period(cli: Cli, name: str, n: int = 8) -> Counter[str]:
    """One alarm period with data from whichever fleets serve: a burst, a wait for the
    lines it causes (one stats interval past the first, bounded), then the clock moves one
    period on. The configs that served the burst."""
    since = sandbox_epoch(cli)
    served = invoke_split(cli, name, n)
    deadline = time.monotonic() + 40
    while not spec_events(cli, name, since) and time.monotonic() < deadline:
        time.sleep(1.0)
    # vLLM's timer (real time) logs the rest of the burst's work within one more interval;
    # polled in half seconds (no sleep over a second), it is the engine's clock, not AWS's.
    settle = time.monotonic() + STATS_INTERVAL_S + 1
    while time.monotonic() < settle:
        time.sleep(0.5)
    advance(cli, PERIOD_S)
    return served


def fresh_hour(cli: Cli, name: str, periods: int = 2) -> None:
    """Make the live fleet's last hour of acceptance this engine's greedy traffic alone:
    the clock moves an hour on (earlier sampled traffic leaves the window), then a few
    periods with greedy bursts (the acceptance a rollout's mixed threshold starts from)."""
    advance(cli, 3600)
    for _ in range(periods):
        bake_period(cli, name, n=4)


def alarms_named(cli: Cli, prefix: str) -> list[str]:
    found = cli.client("cloudwatch").describe_alarms(AlarmNamePrefix=prefix)["MetricAlarms"]
    return sorted(a["AlarmName"] for a in found)


def config_and_models(cli: Cli, config: str) -> dict[str, Any]:
    """Whether `config` exists, and its models (empty when it is gone)."""
    sm = cli.client("sagemaker")
    names = [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]]
    return {"exists": config in names, "all": names}
