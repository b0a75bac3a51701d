"""`Endpoint.bench(concurrency=2)` and `sm_peagle.bench(name, concurrency="1,2")` work
against the sandbox (SIMULATED engine): an int, a list and the CLI's string are one
parser's input. (Before, an int raised TypeError: 'int' object is not iterable.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.sandbox_helpers import point_at_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-sdk-measure"), "gpt-oss-20b")


@pytest.fixture
def env(sb: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    point_at_sandbox(sb.state, monkeypatch, tmp_path)


def test_endpoint_bench_takes_an_int(sb: Sandbox, env: Any, tmp_path: Path) -> None:
    import sm_peagle

    before = len(sb.ground_truth(NAME))
    out = tmp_path / "r.json"
    r = sm_peagle.Endpoint(NAME).bench(
        concurrency=2, requests=2, max_tokens=8, acceptance_wait=0, out=out
    )
    assert [lv["concurrency"] for lv in r.levels] == [2]
    assert r.to_dict()["schema"] == "peagle.bench/3" and r.written == [out] and out.exists()
    assert len(sb.ground_truth(NAME)) - before >= 2


def test_sdk_bench_takes_the_cli_string(sb: Sandbox, env: Any) -> None:
    import sm_peagle

    r = sm_peagle.bench(NAME, concurrency="1,2", requests=2, max_tokens=8, acceptance_wait="0")
    assert [lv["concurrency"] for lv in r.levels] == [1, 2]
    import json

    doc = json.loads(json.dumps(r.to_dict()))  # to_dict() is the JSON document
    assert doc["levels"] == r.levels and doc["kind"] == r.kind == "bench"
    with pytest.warns(FutureWarning, match=r"BenchResult\['levels'\] is deprecated: use .levels"):
        assert r["levels"] == r.levels  # the dict it was, for one release
