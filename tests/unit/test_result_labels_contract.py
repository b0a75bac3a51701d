"""Result labels come through the plugin contract (issue 35): a plugin written only against
`sm_peagle.contract` declares what its target's results are called (`ResultLabel`), and
peagle's documents, caveats and `recommend` use its words; peagle names no plugin.

The plugin here is a stand-in with labels no real plugin has, so every expected string
comes from its declaration, never from peagle's code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from sm_peagle import contract, plugins
from sm_peagle.benchmarking.datasets import builtin
from sm_peagle.benchmarking.metrics import RequestRecord, summarize_level
from sm_peagle.benchmarking.report import provenance_lines
from sm_peagle.benchmarking.results import bench_document, target_record
from sm_peagle.benchmarking.sweep import combine_runs
from sm_peagle.ops.measure_results import BenchResult, RaceResult, TuneKResult
from sm_peagle.planning.recommend import throughput_basis

MADE_UP = contract.ResultLabel(
    "LOCAL (MADE UP)", simulated=True, caveat="MADE UP: the local stand-in invented these"
)
REAL = contract.ResultLabel(
    "LOCAL (engine *)", simulated=False, caveat="LOCAL engine: real tokens, laptop timings"
)


class _Target:
    name = "local"
    options: Sequence[contract.TargetOption] = ()
    offer = contract.Wording(cli="--local", python="local.client()")
    run = contract.Wording(cli="peagle --local", python="local.client()")

    def __init__(self) -> None:
        self.state: contract.TargetState | None = None

    def activate(self, values: Mapping[str, str | bool]) -> contract.TargetState:
        raise NotImplementedError

    def current(self) -> contract.TargetState | None:
        return self.state


class _Plugin(contract.PluginBase):
    name = "local"
    distribution = "peagle-local-stand-in"

    def __init__(self) -> None:
        self._target = _Target()

    def target(self) -> _Target:
        return self._target

    def labels(self) -> Sequence[contract.ResultLabel]:
        return (MADE_UP, REAL)


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Plugin]:
    plugin = _Plugin()
    plugins._labels.cache_clear()  # the labels are read once per process
    monkeypatch.setattr(plugins, "installed", lambda: (plugin,))
    yield plugin
    plugins._labels.cache_clear()


def _point_at(plugin: _Plugin, monkeypatch: pytest.MonkeyPatch, label: str, engine: str) -> None:
    """What the plugin's `activate` does: PEAGLE_TARGET names it, `current` answers."""
    monkeypatch.setenv("PEAGLE_TARGET", plugin.target().name)
    plugin.target().state = contract.TargetState(
        name="local", url="http://127.0.0.1:9", label=label, engine=engine
    )


def _doc(simulated: bool, target: dict[str, Any] | None) -> dict[str, Any]:
    records = [
        RequestRecord(
            index=0, ok=True, sent_at=1000.0, ended_at=1001.0, ttft_s=0.1, tpot_s=0.01,
            e2e_s=1.0, input_tokens=20, output_tokens=100, content_chunks=10,
            finish_reason="stop", request_id="r0", itl_s=(0.01,),
        )
    ]  # fmt: skip
    level = summarize_level(records, concurrency=1, cpu_seconds=[0.1], usd_per_hour=4.2)
    return bench_document(
        provenance={
            "model": "gpt-oss-20b", "endpoint": "ep", "instance_type": "ml.g7e.2xlarge",
            "instance_count": 1, "usd_per_hour": 4.2, "image": "img", "vllm_version": "0.31.0",
            "mode": "baseline", "k": None, "speculative_config": None,
        },
        dataset=builtin().describe(), load={"kind": "closed"}, levels=[level],
        started_at=1000.0, ended_at=1010.0, simulated=simulated, target=target,
    )  # fmt: skip


def test_a_made_up_target_s_document_carries_its_plugin_s_label_and_caveat(local, monkeypatch):
    _point_at(local, monkeypatch, MADE_UP.label, "SIMULATED")
    target = target_record()
    assert target == {
        "name": "local", "label": MADE_UP.label, "engine": "SIMULATED",
        "url": "http://127.0.0.1:9",
    }  # fmt: skip
    doc = _doc(True, target)
    assert doc["label"] == MADE_UP.label and doc["simulated"] is True
    assert doc["target"] == target and doc["notes"][0] == MADE_UP.caveat
    assert doc["levels"][0]["usd_per_million_output_tokens"] is None  # not AWS: no cost
    assert BenchResult(doc).caveat == MADE_UP.caveat
    assert MADE_UP.caveat in provenance_lines(doc)
    assert throughput_basis(doc) == f"SIMULATED throughput ({MADE_UP.label})"
    sweep = combine_runs([doc])
    assert sweep["label"] == MADE_UP.label and sweep["simulated"] is True


def test_a_real_engine_target_s_label_is_matched_by_its_pattern(local, monkeypatch):
    label = "LOCAL (engine 9.9)"
    _point_at(local, monkeypatch, label, "vllm 9.9 (laptop)")
    doc = _doc(True, target_record())
    assert doc["label"] == label and "simulated" not in doc  # a real engine's numbers
    assert doc["engine"] == "vllm 9.9 (laptop)" and doc["notes"][0] == REAL.caveat
    assert BenchResult(doc).caveat == REAL.caveat
    assert throughput_basis(doc) == f"{label} throughput, not measured on AWS"


def test_a_made_up_answer_without_a_target_takes_the_plugin_s_simulated_label(local):
    """The x-peagle-simulated header seen, but no target record: never labelled AWS."""
    doc = _doc(True, None)
    assert doc["label"] == MADE_UP.label and doc["simulated"] is True
    assert doc["notes"][0] == MADE_UP.caveat


def test_aws_documents_have_no_target_and_no_caveat(local):
    doc = _doc(False, None)
    assert doc["label"] == "AWS" and doc["target"] is None and "simulated" not in doc
    assert doc["notes"] == [] and BenchResult(doc).caveat is None


def test_race_and_tune_k_results_say_made_up_in_the_plugin_s_words(local):
    """A race or tune-k document has no target label of its own (tune-k's is ESTIMATE):
    made-up numbers carry the plugin's simulated caveat, AWS's none."""
    assert RaceResult({"simulated": True, "verdict": "x"}).caveat == MADE_UP.caveat
    assert RaceResult({"verdict": "x"}).caveat is None
    estimate = {"label": "ESTIMATE (not measured)", "simulated": True, "estimates": []}
    assert TuneKResult(estimate).caveat == MADE_UP.caveat
    assert TuneKResult({**estimate, "simulated": False}).caveat is None
