"""`tune-k --component` (SDK `component=`) on an endpoint with inference components, against
the sandbox (SIMULATED engine; issue 24, item 8).

Before, tune-k had no --component: on such an endpoint it benchmarked, then said the
endpoint "runs no speculation" although its p-eagle component runs K=7. Now the
component is required there (exit 2, naming the components, before any request is
served), and with it tune-k measures that component and estimates every K' <= its K.
What was served, and by which component, is the sandbox's ground truth.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.errors import SpecError
from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.plan_helpers import TWO_COMPONENTS
from tests.sandbox_helpers import point_at_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"  # the endpoint name peagle gives TWO_COMPONENTS
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"  # `<endpoint>-<short name>`
K = 7  # TWO_COMPONENTS deploys `p-eagle:k=7`
ARGS = ("-c", "1", "-n", "12", "--max-tokens", "64", "--acceptance-wait", "5s")


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-tune-k"), *TWO_COMPONENTS)


def served(sb: Sandbox, since: int) -> list[tuple[str, str, int | None]]:
    """(component, mode, K) of each request the sandbox served after the first `since`."""
    rows = sb.ground_truth(NAME)[since:]
    return [(r["component"], r["mode"], r.get("k")) for r in rows if r["status"] == "ok"]


def test_without_a_component_it_is_refused_before_any_request(sb: Sandbox) -> None:
    start = len(sb.ground_truth(NAME))
    refused = sb.cli("--sandbox", "tune-k", NAME, *ARGS, check=False)
    assert refused.returncode == 2, refused.stderr
    (line,) = [ln for ln in refused.stderr.splitlines() if ln.startswith("error:")]
    assert f"pass --component with one of p-eagle ({PEAGLE}), baseline ({BASELINE})" in line
    assert len(sb.ground_truth(NAME)) == start


def test_the_cli_estimates_the_named_component_at_its_k(sb: Sandbox) -> None:
    start = len(sb.ground_truth(NAME))
    out = sb.cli("--sandbox", "tune-k", NAME, "--component", "p-eagle", *ARGS, "--json")
    doc = json.loads(out.stdout)
    assert (doc["mode"], doc["k"], doc["simulated"]) == ("p-eagle", K, True)
    (est,) = doc["estimates"]
    assert est["concurrency"] == 1 and est["measured_k"] == K
    assert [row["k"] for row in est["by_k"]] == list(range(1, K + 1))
    assert set(served(sb, start)) == {(PEAGLE, "p-eagle", K)}  # only that component


def test_the_sdk_takes_component_and_refuses_without_it(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sm_peagle

    point_at_sandbox(sb.state, monkeypatch, tmp_path)
    start = len(sb.ground_truth(NAME))
    with pytest.raises(SpecError, match="pass component= with one of p-eagle"):  # SDK words
        sm_peagle.tune_k(NAME, requests=12, max_tokens=64, acceptance_wait=5)
    assert len(sb.ground_truth(NAME)) == start
    result: Any = sm_peagle.tune_k(
        NAME, component=PEAGLE, requests=12, max_tokens=64, acceptance_wait=5
    )  # the full name works too
    assert (result.mode, result.k) == ("p-eagle", K)
    assert result.estimates[0].measured_k == K
    assert set(served(sb, start)) == {(PEAGLE, "p-eagle", K)}
