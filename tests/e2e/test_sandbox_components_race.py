"""Issue 17's acceptance, end to end on the sandbox (SIMULATED engine), through the real
CLI in subprocesses: two inference components (p-eagle K=7 and baseline) on one endpoint;
invoke each; `race` them; `bench --component`; `logs --component`; scale one to zero;
delete; nothing left.

Which component served a request is read from the sandbox's ground truth: the runtime
records the InferenceComponentName header each invocation carried (and the mode and K
of the component's model), so a lane, a benchmark or a log line that went to the wrong
component fails here. A refusal before traffic is checked by the ground truth too: the
request count does not move.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.plan_helpers import TWO_COMPONENTS
from tests.sandbox_helpers import leftovers

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"  # the endpoint name peagle gives TWO_COMPONENTS
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"  # `<endpoint>-<short name>`
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "peagle.bench-4.schema.json"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-ic-race"), *TWO_COMPONENTS)


def ok(sb: Sandbox) -> list[dict[str, Any]]:
    return [r for r in sb.ground_truth(NAME) if r["status"] == "ok"]


def refused(sb: Sandbox, *args: str) -> str:
    """Exit 2 with one line, and not one request reached the endpoint."""
    before = len(sb.ground_truth(NAME))
    proc = sb.cli("--sandbox", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(sb.ground_truth(NAME)) == before
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_1_invoke_each_component_by_its_short_name(sb: Sandbox) -> None:
    for short in ("p-eagle", "baseline"):
        sb.cli("--sandbox", "invoke", NAME, "Hello", "--no-stream", "--max-tokens", "16",
               "--component", short)  # fmt: skip
    runs = ok(sb)[-2:]
    assert [(r["component"], r["mode"], r.get("k")) for r in runs] == [
        (PEAGLE, "p-eagle", 7),
        (BASELINE, "baseline", None),
    ]


def test_2_a_missing_or_unknown_component_is_refused_before_traffic(sb: Sandbox) -> None:
    both = f"p-eagle ({PEAGLE}), baseline ({BASELINE})"
    invoke = ("invoke", NAME, "Hello", "--no-stream")
    line = refused(sb, *invoke)
    assert "hosts inference components" in line and both in line
    line = refused(sb, *invoke, "--component", "nope")
    assert f"has no inference component 'nope'; its components: {both}" in line
    line = refused(sb, "bench", NAME, "-c", "1", "-n", "1")
    assert "pass --component" in line and both in line
    line = refused(sb, "bench", NAME, "--component", "nope", "-c", "1", "-n", "1")
    assert "'nope'" in line
    line = refused(sb, "race", NAME, NAME)  # two sides, neither names a component
    assert "hosts inference components" in line
    line = refused(sb, "race", f"{NAME}/p-eagle", f"{NAME}/nope")
    assert "'nope'" in line
    line = refused(sb, "race", NAME, "--component", "p-eagle")  # one --component
    assert "--component twice" in line
    line = refused(sb, "logs", NAME, "--component", "nope")
    assert "'nope'" in line


@pytest.mark.parametrize(
    "args",
    [
        ("race", NAME, "--component", "p-eagle", "--component", "baseline"),
        ("race", f"{NAME}/p-eagle", f"{NAME}/baseline"),
    ],
    ids=["--component twice", "ENDPOINT/COMPONENT"],
)
def test_3_race_two_components_of_one_endpoint(sb: Sandbox, args: tuple[str, ...]) -> None:
    before = {r["request_id"] for r in sb.ground_truth(NAME)}
    out = sb.cli("--sandbox", *args, "--max-tokens", "48", "--json")
    result = json.loads(out.stdout)
    a, b = result["a"], result["b"]
    assert (a["component"], b["component"]) == (PEAGLE, BASELINE)
    assert (a["error"], b["error"]) == (None, None)
    new = [r for r in ok(sb) if r["request_id"] not in before]
    by_component = {r["component"]: r for r in new}
    assert len(new) == 2 and set(by_component) == {PEAGLE, BASELINE}
    # Each lane's tokens are those its own component generated (usage, not chunks).
    assert a["output_tokens"] == by_component[PEAGLE]["completion_tokens"] > 0
    assert b["output_tokens"] == by_component[BASELINE]["completion_tokens"] > 0
    assert (by_component[PEAGLE]["mode"], by_component[PEAGLE]["k"]) == ("p-eagle", 7)
    assert by_component[BASELINE]["mode"] == "baseline"
    assert result["verdict"].startswith(("A ", "B "))


def test_4_bench_one_component(sb: Sandbox) -> None:
    before = {r["request_id"] for r in sb.ground_truth(NAME)}
    # Two client processes (--workers 2): the component reaches each worker's client too.
    out = sb.cli("--sandbox", "bench", NAME, "--component", "p-eagle", "-c", "2", "-n", "4",
                 "--workers", "2", "--max-tokens", "32", "--acceptance-wait", "20s",
                 "--json")  # fmt: skip
    doc = json.loads(out.stdout)
    assert (doc["component"], doc["mode"], doc["k"]) == (PEAGLE, "p-eagle", 7)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(doc)
    truth = {r["request_id"]: r for r in sb.ground_truth(NAME) if r["request_id"] not in before}
    assert {r["component"] for r in truth.values()} == {PEAGLE}  # warm-up ones included
    (level,) = doc["levels"]
    measured = [truth[r["request_id"]] for r in level["records"]]
    assert len(measured) == 4 and {r["worker"] for r in level["records"]} == {0, 1}
    assert [r["output_tokens"] for r in level["records"]] == [
        r["completion_tokens"] for r in measured
    ]
    # Acceptance comes from the component's own log group (the endpoint's has none).
    assert level["acceptance"]["status"] == "measured", level["acceptance"]


def test_5_logs_of_each_component(sb: Sandbox) -> None:
    events = json.loads(
        sb.cli("--sandbox", "logs", NAME, "--component", "p-eagle", "--json").stdout
    )
    messages = [e["message"] for e in events]
    assert any(f"SIMULATED container for {NAME} component {PEAGLE}" in m for m in messages)
    spec = [e["spec_decoding"] for e in events if e["spec_decoding"]]
    assert spec and all(s["mean_acceptance_length"] >= 1 for s in spec)
    base = json.loads(sb.cli("--sandbox", "logs", NAME, "--component", BASELINE, "--json").stdout)
    base_messages = [e["message"] for e in base]
    assert any(f"component {BASELINE}" in m for m in base_messages)
    assert any('"POST /invocations HTTP/1.1" 200' in m for m in base_messages)
    assert not any(e["spec_decoding"] for e in base)  # baseline never drafts
    plain = sb.cli("--sandbox", "logs", NAME)
    assert f"add --component with one of p-eagle ({PEAGLE}), baseline ({BASELINE})" in (
        plain.stderr
    )


def test_6_ls_shows_the_components(sb: Sandbox) -> None:
    (row,) = json.loads(sb.cli("--sandbox", "ls", "--json").stdout)
    assert (row["endpoint"], row["components"]) == (NAME, [BASELINE, PEAGLE])
    assert "baseline, p-eagle" in sb.cli("--sandbox", "ls").stdout


def test_7_scaled_to_zero_then_delete_leaves_nothing(sb: Sandbox) -> None:
    sb.cli("--sandbox", "update", NAME, "--component", "baseline", "--copies", "0", "--yes")
    cold = sb.cli("--sandbox", "invoke", NAME, "Hi", "--no-stream", "--component", "baseline",
                  check=False)  # fmt: skip
    assert cold.returncode == 1 and "has no capacity" in cold.stderr
    before = len(sb.ground_truth(NAME))
    bench = sb.cli("--sandbox", "bench", NAME, "--component", "baseline", "-c", "1", "-n", "1",
                   check=False)  # fmt: skip
    assert bench.returncode == 1 and "has no copies (scaled to zero)" in bench.stderr
    assert len(sb.ground_truth(NAME)) == before  # refused before any traffic
    out = sb.cli("--sandbox", "race", NAME, "--component", "p-eagle", "--component", "baseline",
                 "--max-tokens", "16", "--json")  # fmt: skip
    result = json.loads(out.stdout)
    assert result["a"]["error"] is None and result["a"]["output_tokens"] > 0
    assert "has no capacity" in result["b"]["error"]
    assert result["verdict"] == "no verdict: B produced no tokens"

    sb.cli("--sandbox", "delete", NAME, "--yes")
    assert leftovers(sb.client) == {}
    assert json.loads(sb.cli("--sandbox", "ls", "--json").stdout) == []
