"""The SDK's `component=` on a component endpoint, against the sandbox (SIMULATED engine).

The endpoint (p-eagle K=7 and baseline components) is made by the real CLI; then this
process points boto3 at the sandbox as `sm_peagle.use_sandbox()` does and drives
`sm_peagle.Endpoint`. Which component served a request is read from the sandbox's
ground truth (the InferenceComponentName each invocation carried, and the mode and K of
that component's model); a refusal before traffic leaves the request count unchanged.
"""

from __future__ import annotations

import re
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
BOTH = f"p-eagle ({PEAGLE}), baseline ({BASELINE})"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-sdk-ic"), *TWO_COMPONENTS)


@pytest.fixture
def ep(sb: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """An Endpoint handle in this process, every boto3 client pointed at the sandbox."""
    from sm_peagle import Endpoint

    point_at_sandbox(sb.state, monkeypatch, tmp_path)
    return Endpoint(NAME)


def served(sb: Sandbox, since: int) -> list[tuple[str, str, int | None]]:
    """(component, mode, K) of each request the sandbox served after the first `since`."""
    rows = sb.ground_truth(NAME)[since:]
    return [(r["component"], r["mode"], r.get("k")) for r in rows if r["status"] == "ok"]


def test_invoke_and_stream_carry_the_named_component(sb: Sandbox, ep: Any) -> None:
    start = len(sb.ground_truth(NAME))
    answer = ep.invoke("Hello", component="baseline", max_tokens=8)
    assert answer.text
    chunks = ep.stream("Hello", component=PEAGLE, max_tokens=8)  # the full name works too
    assert chunks.completion().text
    assert served(sb, start) == [(BASELINE, "baseline", None), (PEAGLE, "p-eagle", 7)]


async def _ainvoke(ep: Any) -> str:
    return (await ep.ainvoke("Hello", component="p-eagle", max_tokens=8)).text


def test_ainvoke_carries_the_component(sb: Sandbox, ep: Any) -> None:
    import asyncio

    start = len(sb.ground_truth(NAME))
    assert asyncio.run(_ainvoke(ep))
    assert served(sb, start) == [(PEAGLE, "p-eagle", 7)]


def test_no_or_an_unknown_component_is_refused_before_traffic(sb: Sandbox, ep: Any) -> None:
    start = len(sb.ground_truth(NAME))
    with pytest.raises(SpecError) as missing:
        ep.invoke("Hello", max_tokens=8)
    assert str(missing.value).endswith(f"pass component= with one of {BOTH}")
    assert missing.value.exit_code == 2
    with pytest.raises(SpecError, match="has no inference component 'nope'; its components: "):
        ep.stream("Hello", component="nope", max_tokens=8)
    with pytest.raises(SpecError, match="pass component= with one of"):
        ep.bench(concurrency=[1], requests=1, max_tokens=8)
    assert len(sb.ground_truth(NAME)) == start  # nothing reached the endpoint


def test_bench_sends_every_request_to_the_component(sb: Sandbox, ep: Any) -> None:
    before = {r["request_id"] for r in sb.ground_truth(NAME)}
    doc = ep.bench(
        component="baseline", concurrency=[1], requests=2, max_tokens=8, acceptance_wait_s=0
    )
    assert (doc.component, doc.mode) == (BASELINE, "baseline")
    new = [r for r in sb.ground_truth(NAME) if r["request_id"] not in before]
    assert len(new) >= 2 and {r["component"] for r in new} == {BASELINE}


def test_logs_of_a_component_are_its_own(sb: Sandbox, ep: Any) -> None:
    ep.invoke("Hello", component="baseline", max_tokens=8)
    mine = [e.message for e in ep.logs(component="baseline", since=3600)]
    assert any(f"SIMULATED container for {NAME} component {BASELINE}" in m for m in mine)
    assert not any(f"component {PEAGLE}" in m for m in mine)
    with pytest.raises(SpecError, match=re.escape(f"its components: {BOTH}")):
        ep.logs(component="nope")
