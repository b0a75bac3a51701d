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
    assert r.to_dict()["schema"] == "peagle.bench/4" and r.written == [out] and out.exists()
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


def _cli_json(capsys: pytest.CaptureFixture, *argv: str) -> Any:
    import json

    from sm_peagle.cli.app import main

    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_measure_results_are_frozen_and_to_dict_is_the_cli_document(
    sb: Sandbox, env: Any, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """bench's result is the document written to `out` (and `report --json` of that file
    prints the SDK's report of it), a race's the document `race --json` prints: read by
    attribute, no longer a dict."""
    import dataclasses
    import json

    import sm_peagle

    out = tmp_path / "bench.json"
    r = sm_peagle.bench(NAME, concurrency=1, requests=2, max_tokens=8, acceptance_wait=0, out=out)
    assert dataclasses.is_dataclass(r) and not isinstance(r, dict)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.written = []  # type: ignore[misc]
    written = json.loads(out.read_text())
    assert r.to_dict() == written and r.written == [out]
    assert (r.kind, r.label, r.endpoint) == ("bench", written["label"], NAME)
    assert r.levels == written["levels"] and r.notes == written["notes"]

    doc = _cli_json(capsys, "report", str(out))
    report = sm_peagle.report(out)
    assert report.to_dict() == doc and report.levels == doc["levels"]

    doc = _cli_json(capsys, "race", NAME, NAME, "--prompt", "hi", "--max-tokens", "8")
    race = sm_peagle.race(NAME, NAME, prompt="hi", max_tokens=8)
    assert list(race.to_dict()) == [k for k in doc if k != "label"]
    assert (race.a.endpoint, race.b.endpoint) == (NAME, NAME)
    assert list(race.a.to_dict()) == list(doc["a"]) and race.a.text == race.to_dict()["a"]["text"]
    assert race.verdict == race.to_dict()["verdict"] and race.simulated is doc["simulated"]
