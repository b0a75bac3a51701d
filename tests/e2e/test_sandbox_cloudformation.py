"""`peagle export --format cloudformation` creates in the sandbox's CloudFormation, and
peagle manages what the stack made (issue 33, item 6).

moto's CloudFormation ignores `ModelName`/`EndpointConfigName`/`EndpointName` and names
each resource `<stack>-<logical id>-<suffix>` (facts 14), so a template that linked the
resources by literal names failed there: the endpoint config named a model that did not
exist. Linked by `Fn::GetAtt`, the stack creates; the endpoint then has the stack's name
but the plan's tags, and peagle finds it by them: `ls` lists it as peagle's, `status` reads
it, `diff -f` and `apply -f` of the exported spec find it (no change; a changed spec is
an update `apply` refuses, naming the stack), `status` of the plan's name points at it,
and `delete` removes everything the stack made.

The stack is created with boto3's `create_stack`, as a user's own tooling would; every
peagle command runs as a subprocess of the real CLI against the started sandbox.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.sandbox_helpers import leftovers

pytestmark = pytest.mark.e2e

PLANNED = "peagle-gpt-oss-20b-baseline"  # the endpoint name the plan gives the spec below
STACK = "peagle-cfn"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-cfn"))


def _json(sb: Sandbox, *args: str, code: int = 0) -> Any:
    proc = sb.cli("--sandbox", "--json", *args, check=False)
    assert proc.returncode == code, f"peagle {' '.join(args)}\n{proc.stderr}{proc.stdout}"
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def test_the_exported_stack_creates_in_the_sandbox_and_peagle_manages_it(
    sb: Sandbox, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"model: gpt-oss-20b\nregion: us-east-1\nrole: {sb.state['role_arn']}\n"
        "speculative:\n  mode: baseline\n"
    )
    template = tmp_path / "stack.json"
    sb.cli(
        "--sandbox", "export", "-f", str(spec), "--format", "cloudformation", "-o", str(template)
    )

    cfn = sb.client("cloudformation")
    cfn.create_stack(StackName=STACK, TemplateBody=template.read_text())
    [stack] = cfn.describe_stacks(StackName=STACK)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    [output] = stack["Outputs"]
    live = output["OutputValue"]
    assert live.startswith(f"{STACK}-PeagleEndpoint-")  # moto's name, not the plan's

    sm = sb.client("sagemaker")
    ep = sm.describe_endpoint(EndpointName=live)
    [variant] = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])[
        "ProductionVariants"
    ]
    # GetAtt carried the stack's own names from model to config to endpoint.
    assert ep["EndpointConfigName"].startswith(f"{STACK}-PeagleEndpointConfig-")
    assert variant["ModelName"].startswith(f"{STACK}-PeagleModel-")
    sm.describe_model(ModelName=variant["ModelName"])
    deadline = time.monotonic() + 60  # a bound on a stuck endpoint, not a timing claim
    while sm.describe_endpoint(EndpointName=live)["EndpointStatus"] != "InService":
        assert time.monotonic() < deadline
        time.sleep(0.2)

    rows = _json(sb, "ls")
    rows = rows["endpoints"] if isinstance(rows, dict) else rows
    assert [(r["endpoint"], r["managed"]) for r in rows] == [(live, True)]

    status = _json(sb, "status", live)
    assert (status["endpoint"], status["status"], status["mode"]) == (live, "InService", "baseline")
    assert status["model"] == variant["ModelName"] and status["unfinished"] == []

    # The spec the stack was exported from: found by its tags, and nothing to change.
    diff = _json(sb, "diff", "-f", str(spec))
    assert (diff["endpoint"], diff["action"]) == (live, "noop"), diff
    applied = _json(sb, "apply", "-f", str(spec), "--yes")
    assert applied["action"] == "noop", applied
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == [live]

    # The plan's name is not an endpoint: status says where the deployment is, and does
    # not offer the stack's (live) model as something an unfinished operation left.
    error = _json(sb, "status", PLANNED, code=1)["error"]
    assert live in error["message"] and error["fix"] == f"`peagle --sandbox status {live}`", error
    assert "did not finish" not in error["message"]

    # A changed spec: diff shows the update on the stack's endpoint, and apply refuses it
    # (updating by the plan's name would make a second endpoint) before changing anything.
    changed = tmp_path / "changed.yaml"
    changed.write_text(spec.read_text() + "tags:\n  team: ml\n")
    diff = _json(sb, "diff", "-f", str(changed))
    assert (diff["endpoint"], diff["action"]) == (live, "update"), diff
    error = _json(sb, "apply", "-f", str(changed), "--yes", code=2)["error"]
    assert live in error["message"] and "stack" in error["fix"], error
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == [live]
    assert len(sm.list_models()["Models"]) == 1

    deleted = _json(sb, "delete", live, "--yes")
    assert set(deleted["deleted"]) == {live, ep["EndpointConfigName"], variant["ModelName"]}
    assert leftovers(sb.client) == {}
