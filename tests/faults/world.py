"""The world a fault case runs in: one sandbox, the lag proxy in front of it, the CLI
pointed at the proxy, and what the account holds (a snapshot) read past the proxy.

The CLI runs as a user runs it, `peagle --sandbox <command>`: `--sandbox` reads the
sandbox's state file from PEAGLE_STATE_DIR, checks its health at the url there and
points every AWS client at that url. The CLI's PEAGLE_STATE_DIR is a copy of the
sandbox's own state whose url is the proxy's, so every request the CLI sends passes
through the proxy, and the test's own boto3 calls (set-up, snapshots, clean-up) do not.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore import xform_name

from tests.e2e.test_sandbox import Sandbox
from tests.faults.proxy import Exchange, LagProxy, is_mutating
from tests.sandbox_helpers import sandbox_client

__all__ = [
    "BYSTANDERS",
    "DEPLOYMENT",
    "JUMPSTART",
    "OP_TAGS",
    "FaultWorld",
    "Reference",
    "Signaller",
    "fault_world",
]

DEPLOYMENT = "peagle-gpt-oss-20b-p-eagle"  # what `deploy gpt-oss-20b` and the specs name
JUMPSTART = "jumpstart-gpt-oss-20b"  # tests/integration/test_adopt.py's boto3-made endpoint
# Made with boto3 before every case, no peagle tag: no command may touch them. The
# orphan model is what a careless gc would take.
BYSTANDERS = ("bystander", "bystander-cfg", "bystander-mdl", "bystander-orphan-mdl")
# An operation's own tags: their values (an id, host:pid, a deadline) differ from run to
# run, so snapshots compare their presence, not their values.
OP_TAGS = ("peagle:operation", "peagle:operation-owner", "peagle:operation-until")
# ... and the id of the operation that completed a deployment, on its endpoint.
MASKED = (*OP_TAGS, "peagle:completed")
_SETTLING = {"Creating", "Updating", "Deleting", "SystemUpdating", "RollingBack"}
# Two inference components (p-eagle K=7, baseline), one GPU each: `update --component`'s
# starting state (tests/plan_helpers.py's TWO_COMPONENTS without scale-to-zero).
COMPONENTS = ("gpt-oss-20b", "-t", "ml.g7e.12xlarge", "--component", "p-eagle:k=7",
              "--component", "baseline", "--accelerators-per-copy", "1")  # fmt: skip
_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"


def _spec(k: int) -> dict[str, Any]:
    return {"model": "gpt-oss-20b", "speculative": {"mode": "p-eagle", "num_speculative_tokens": k}}


@dataclass(frozen=True)
class Reference:
    """An uninterrupted run: the account before and after (COMPLETED), what the CLI sent
    (the proxy's log), and the after snapshot with the operation tags' real values."""

    before: dict[str, dict[str, Any]]
    completed: dict[str, dict[str, Any]]
    log: list[Exchange]
    raw: dict[str, dict[str, Any]]


class Signaller:
    """The proxy's hooks: the first sends `sig` to the CLI process; `second` (a double
    Ctrl-C) sends SIGINT again on the first request of the rollback."""

    def __init__(self, sig: signal.Signals) -> None:
        self.sig = sig
        self.proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()

    def attach(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self._ready.set()

    def _send(self, sig: signal.Signals) -> None:
        # The CLI cannot send a request before Popen returned; the wait only orders threads.
        assert self._ready.wait(30), "no process to signal"
        assert self.proc is not None
        self.proc.send_signal(sig)

    def first(self) -> None:
        self._send(self.sig)

    def second(self) -> None:
        self._send(signal.SIGINT)


class FaultWorld:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.sandbox = Sandbox(root)
        self.proxy: LagProxy | None = None
        self._server: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}
        self.spec3, self.spec5 = root / "spec-k3.yaml", root / "spec-k5.yaml"
        self._references: dict[str, Reference] = {}
        self._setups: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    # ------------------------------------------------------------------ life cycle

    def start(self) -> FaultWorld:
        """The sandbox's server started directly, as `peagle sandbox start` spawns it, to
        also pass --updating-seconds (`sandbox start` has no such option; its 3 s default
        would cost every update case 2 s); `sandbox status` reads it as usual."""
        sb = self.sandbox
        state_dir = Path(sb.env["PEAGLE_STATE_DIR"])
        state_dir.mkdir(parents=True)
        cmd = [sys.executable, "-m", "peagle_sandbox.server", "--port", "0",
               "--state-file", str(state_dir / "sandbox.json"),
               "--log-file", str(state_dir / "sandbox.log"), "--metrics-interval", "1",
               "--creating-seconds", "1", "--updating-seconds", "1"]  # fmt: skip
        with open(state_dir / "sandbox.log", "ab") as log:
            self._server = subprocess.Popen(
                cmd, env=sb.env, cwd=state_dir, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 60  # a bound on a server that never answers
        while not sb.state.get("healthy"):
            assert self._server.poll() is None, (state_dir / "sandbox.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the sandbox never answered"
            time.sleep(0.1)
            sb.state = json.loads(sb.cli("sandbox", "status", "--json").stdout)
        self.proxy = LagProxy(sb.url).__enter__()
        via = self.root / "via-proxy"
        via.mkdir()
        state = json.loads(Path(sb.state["state_file"]).read_text())
        (via / "sandbox.json").write_text(json.dumps({**state, "url": self.proxy.url}))
        self.env = {**sb.env, "PEAGLE_STATE_DIR": str(via)}
        self.spec3.write_text(yaml.safe_dump(_spec(3)))
        self.spec5.write_text(yaml.safe_dump(_spec(5)))
        return self

    def stop(self) -> None:
        """Stop the proxy and the server this world started (by its Popen: `sandbox stop`
        would wait seconds for the pid to be reaped, which only its parent, this, does)."""
        if self.proxy is not None:
            self.proxy.__exit__(None, None, None)
        if self._server is not None:
            self._server.terminate()
            try:
                self._server.wait(30)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()

    # ------------------------------------------------------------------ the CLI

    def argv(self, args: tuple[str, ...]) -> list[str]:
        names = {"{spec3}": str(self.spec3), "{spec5}": str(self.spec5)}
        cli = [sys.executable, "-m", "sm_peagle.cli", "--sandbox"]
        return cli + [names.get(a, a) for a in args]

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`peagle --sandbox ARGS` through the proxy (disarmed), to its end."""
        assert self.proxy is not None
        self.proxy.arm(None)
        proc = subprocess.run(
            self.argv(args), env=self.env, capture_output=True, text=True, timeout=180
        )
        if check:
            assert proc.returncode == 0, f"peagle {' '.join(args)}\n{proc.stderr[-3000:]}"
        return proc

    def spawn(self, args: tuple[str, ...]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(args), env=self.env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    # ------------------------------------------------------------------ the account

    def client(self, service: str) -> Any:
        return sandbox_client(self.sandbox.url, service)

    def requests(self) -> list[dict[str, Any]]:
        """The sandbox's record of every AWS request since the last clear."""
        with urllib.request.urlopen(f"{self.sandbox.url}/_peagle/requests") as r:
            return list(json.loads(r.read())["requests"])

    def clear_requests(self) -> None:
        req = urllib.request.Request(f"{self.sandbox.url}/_peagle/requests", method="DELETE")
        urllib.request.urlopen(req).close()

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until no endpoint (nor inference component) is Creating/Updating/Deleting:
        what the account holds is what it holds once SageMaker is done (a bound on a stuck
        endpoint, not a timing claim)."""
        sm = self.client("sagemaker")
        deadline = time.monotonic() + timeout
        while True:
            busy = {
                e["EndpointName"]: e["EndpointStatus"]
                for e in sm.list_endpoints(MaxResults=100)["Endpoints"]
                if e["EndpointStatus"] in _SETTLING
            }
            busy.update(
                (c["InferenceComponentName"], c["InferenceComponentStatus"])
                for c in sm.list_inference_components(MaxResults=100)["InferenceComponents"]
                if c.get("InferenceComponentStatus") in _SETTLING
            )
            if not busy:
                return
            assert time.monotonic() < deadline, f"endpoints never settled: {busy}"
            time.sleep(0.2)

    def snapshot(self, mask: bool = True) -> dict[str, dict[str, Any]]:
        """Everything a deployment can hold, by "kind/name": endpoints (status, config),
        configs (their models), models, inference components, scaling targets, policies
        and alarms, each with its tags (an operation's tag values masked, MASKED, unless
        `mask` is false)."""
        sm = self.client("sagemaker")
        aas, cw = self.client("application-autoscaling"), self.client("cloudwatch")

        def tags(arn: str) -> dict[str, str]:
            found = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}
            return {k: ("<op>" if mask and k in MASKED else v) for k, v in found.items()}

        out: dict[str, dict[str, Any]] = {}
        for e in sm.list_endpoints(MaxResults=100)["Endpoints"]:
            d = sm.describe_endpoint(EndpointName=e["EndpointName"])
            out[f"endpoint/{e['EndpointName']}"] = {
                "status": d["EndpointStatus"],
                "config": d.get("EndpointConfigName"),
                "tags": tags(d["EndpointArn"]),
            }
        for c in sm.list_endpoint_configs(MaxResults=100)["EndpointConfigs"]:
            d = sm.describe_endpoint_config(EndpointConfigName=c["EndpointConfigName"])
            out[f"config/{c['EndpointConfigName']}"] = {
                "models": sorted(v.get("ModelName", "") for v in d["ProductionVariants"]),
                "tags": tags(c["EndpointConfigArn"]),
            }
        for m in sm.list_models(MaxResults=100)["Models"]:
            out[f"model/{m['ModelName']}"] = {"tags": tags(m["ModelArn"])}
        for ic in sm.list_inference_components(MaxResults=100)["InferenceComponents"]:
            out[f"component/{ic['InferenceComponentName']}"] = {
                "endpoint": ic.get("EndpointName"),
                "status": ic.get("InferenceComponentStatus"),
                "tags": tags(ic["InferenceComponentArn"]),
            }
        for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]:
            out[f"target/{t['ResourceId']}"] = {"min": t["MinCapacity"], "max": t["MaxCapacity"]}
        for p in aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]:
            out[f"policy/{p['PolicyName']}"] = {"resource": p["ResourceId"]}
        for a in cw.describe_alarms()["MetricAlarms"]:
            out[f"alarm/{a['AlarmName']}"] = {}
        return out

    # ------------------------------------------------------------------ set-up

    def reset(self) -> None:
        """Remove everything but the bystanders (made once, then checked every case), with
        boto3 past the proxy, and clear the request log: each case starts alike."""
        sm = self.client("sagemaker")
        aas, cw = self.client("application-autoscaling"), self.client("cloudwatch")
        self.settle()
        for p in aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]:
            aas.delete_scaling_policy(
                PolicyName=p["PolicyName"], ServiceNamespace="sagemaker",
                ResourceId=p["ResourceId"], ScalableDimension=p["ScalableDimension"],
            )  # fmt: skip
        for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]:
            aas.deregister_scalable_target(
                ServiceNamespace="sagemaker", ResourceId=t["ResourceId"],
                ScalableDimension=t["ScalableDimension"],
            )  # fmt: skip
        alarms = [a["AlarmName"] for a in cw.describe_alarms()["MetricAlarms"]]
        if alarms:
            cw.delete_alarms(AlarmNames=alarms)
        for ic in sm.list_inference_components(MaxResults=100)["InferenceComponents"]:
            sm.delete_inference_component(InferenceComponentName=ic["InferenceComponentName"])
        deadline = time.monotonic() + 60  # a bound on a component that is never gone
        while sm.list_inference_components(MaxResults=100)["InferenceComponents"]:
            assert time.monotonic() < deadline, "inference components never went"
            time.sleep(0.2)
        for e in sm.list_endpoints(MaxResults=100)["Endpoints"]:
            if e["EndpointName"] not in BYSTANDERS:
                sm.delete_endpoint(EndpointName=e["EndpointName"])
        self.settle()
        for c in sm.list_endpoint_configs(MaxResults=100)["EndpointConfigs"]:
            if c["EndpointConfigName"] not in BYSTANDERS:
                sm.delete_endpoint_config(EndpointConfigName=c["EndpointConfigName"])
        for m in sm.list_models(MaxResults=100)["Models"]:
            if m["ModelName"] not in BYSTANDERS:
                sm.delete_model(ModelName=m["ModelName"])
        self._bystanders()
        self.settle()
        self.clear_requests()

    def _bystanders(self) -> None:
        """The owner's own endpoint and an unused model, made with boto3 (no peagle tag)."""
        sm = self.client("sagemaker")
        if sm.list_endpoints(NameContains="bystander")["Endpoints"]:
            return
        container = {"Image": _IMAGE, "Environment": {"HF_MODEL_ID": "openai/gpt-oss-20b"}}
        role = self.sandbox.state["role_arn"]
        tags = [{"Key": "team", "Value": "owner"}]
        for model in ("bystander-mdl", "bystander-orphan-mdl"):
            sm.create_model(
                ModelName=model, ExecutionRoleArn=role, PrimaryContainer=container, Tags=tags
            )
        sm.create_endpoint_config(
            EndpointConfigName="bystander-cfg",
            ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": "bystander-mdl",
                                 "InstanceType": "ml.g5.2xlarge", "InitialInstanceCount": 1}],
            Tags=tags,
        )  # fmt: skip
        sm.create_endpoint(EndpointName="bystander", EndpointConfigName="bystander-cfg", Tags=tags)

    def prepare(self, start: str) -> None:
        """The starting state a command needs, made as a user would have made it: the
        first time by the CLI (`deploy`, `deploy` with components, `apply`), then by
        replaying the mutating requests that run sent (the sandbox's record of them),
        which saves a CLI start per case.
        Each case compares its starting state with the reference's, so a replay that
        differed from the CLI's result would fail there."""
        if start == "empty":
            return
        if start == "jumpstart":
            self._jumpstart()
        elif start in self._setups:
            sm = self.client("sagemaker")
            for operation, params in self._setups[start]:
                if operation == "CreateInferenceComponent":
                    self.settle()  # as the CLI did: components go on an InService endpoint
                getattr(sm, xform_name(operation))(**params)
        elif start in ("deployed", "applied", "components"):
            self.clear_requests()
            if start == "deployed":
                self.cli("deploy", "gpt-oss-20b", "--yes")
            elif start == "components":
                self.cli("deploy", *COMPONENTS, "--yes")
            else:
                self.cli("apply", "-f", "{spec3}", "--yes")
            self._setups[start] = [
                (r["operation"], r["params"]) for r in self.requests()
                if r["service"] == "sagemaker" and is_mutating(r["operation"])
            ]  # fmt: skip
        else:
            raise ValueError(start)
        self.settle()

    def _jumpstart(self) -> None:
        """An endpoint made with raw boto3 calls as JumpStart's deploy sends them."""
        from tests.integration.test_adopt import create_jumpstart_endpoint

        env = {
            "AWS_ENDPOINT_URL": self.sandbox.url,
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
        with pytest.MonkeyPatch.context() as mp:  # the helper's boto3 client reaches the sandbox
            for key, value in env.items():
                mp.setenv(key, value)
            mp.delenv("AWS_PROFILE", raising=False)
            create_jumpstart_endpoint(self.sandbox.state["role_arn"])

    # ------------------------------------------------------------------ references

    def reference(self, key: str, start: str, args: tuple[str, ...]) -> Reference:
        """The command run uninterrupted from the starting state, once per world."""
        if key not in self._references:
            self.reset()
            self.prepare(start)
            before = self.snapshot()
            self.cli(*args)
            assert self.proxy is not None
            log = self.proxy.log()
            self.settle()
            self._references[key] = Reference(
                before, self.snapshot(), log, self.snapshot(mask=False)
            )
        return self._references[key]


@contextlib.contextmanager
def fault_world(root: Path) -> Iterator[FaultWorld]:
    world = FaultWorld(root)
    try:
        yield world.start()
    finally:
        world.stop()
