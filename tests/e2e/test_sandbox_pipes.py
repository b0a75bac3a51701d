"""Issue 33, item 5, against a running SIMULATED sandbox through the real `peagle` CLI in
subprocesses whose stdout and stderr are pipes (as in CI, or `peagle status X | grep`), with
no COLUMNS set (rich would fall back to 80 columns): deploy, status and bench print no ANSI
and no `[0m` fragment, no wrapped line (rich's word wrap leaves the line ending in a space;
the lines here end in text or in a table border), every URI the sandbox's DescribeModel
reports (image, weights, drafter) appears whole on one line where it is shown, and the wait
shows its elapsed time as `[00:03]`. The URIs are read from the sandbox with boto3, not
from peagle."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.test_sandbox import NAME, Sandbox, running_sandbox

pytestmark = pytest.mark.e2e

CLOCK = re.compile(r"^\[(\d\d):([0-5]\d)\] " + re.escape(NAME) + r" (Creating|InService) ")


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    for sandbox in running_sandbox(tmp_path_factory.mktemp("pipes")):
        for var in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
            sandbox.env.pop(var, None)
        yield sandbox


@pytest.fixture(scope="module")
def piped(sb: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The three commands' outputs, each run with both streams piped."""
    results = tmp_path_factory.mktemp("bench") / "bench.json"
    runs = {
        "deploy": sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--yes"),
        "status": sb.cli("--sandbox", "status", NAME),
        "bench": sb.cli("--sandbox", "bench", NAME, "-c", "1,2", "-n", "2", "--max-tokens",
                        "8", "--acceptance-wait", "0", "-o", str(results)),
    }  # fmt: skip
    return {"runs": runs, "bench_doc": json.loads(results.read_text())}


def uris(sb: Sandbox) -> dict[str, str]:
    """What the sandbox's DescribeModel reports for the endpoint's model: its image and the
    S3 URIs of its weights and of each additional data source (the drafter)."""
    sm = sb.client("sagemaker")
    config = sm.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    variant = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0]
    container = sm.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]
    found = {
        "image": container["Image"],
        "weights": container["ModelDataSource"]["S3DataSource"]["S3Uri"],
    }
    for src in container.get("AdditionalModelDataSources", []):
        found[src["ChannelName"]] = src["S3DataSource"]["S3Uri"]
    # each longer than the value column of an 80-column table (80 less borders and the
    # field column's 17): a value rich would have cut
    assert len(found) == 3 and all(len(u) > 80 - 17 for u in found.values())
    return found


@pytest.mark.parametrize("command", ["deploy", "status", "bench"])
def test_no_ansi_and_no_wrapped_line(piped: dict, command: str) -> None:
    proc: subprocess.CompletedProcess[str] = piped["runs"][command]
    for stream in (proc.stdout, proc.stderr):
        assert "\x1b" not in stream and "[0m" not in stream, stream
        trailing = [line for line in stream.splitlines() if line != line.rstrip()]
        assert trailing == [], f"{command}: wrapped (a line ends in a space): {trailing}"


def test_status_shows_each_uri_whole_on_one_line_of_its_table(sb: Sandbox, piped: dict) -> None:
    lines = piped["runs"]["status"].stdout.splitlines()
    shown = {"image": "image", "weights": "weights", "eagle": "drafter"}
    for channel, uri in uris(sb).items():
        # the row's name and its whole value on one line: the table stayed a table
        assert any(shown[channel] in line and uri in line for line in lines), (uri, lines)


def test_bench_shows_the_image_whole_and_its_levels_as_rows(sb: Sandbox, piped: dict) -> None:
    out = piped["runs"]["bench"].stdout
    assert any(uris(sb)["image"] in line for line in out.splitlines()), out
    # one row per level: a line holding the configuration and each concurrency
    for level in piped["bench_doc"]["levels"]:
        assert any(
            re.search(rf"p-eagle K=3\W+{level['concurrency']}\W", line) for line in out.splitlines()
        ), out


def test_deploy_shows_elapsed_time_as_a_clock(piped: dict) -> None:
    err = piped["runs"]["deploy"].stderr.splitlines()
    waits = [line for line in err if line.startswith("[")]
    assert waits and all(CLOCK.match(line) for line in waits), err
    assert CLOCK.match(waits[-1]).group(3) == "InService"  # type: ignore[union-attr]
    assert not any(re.search(r"\[\d+m\d\ds\]", line) for line in err)
