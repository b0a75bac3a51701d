"""Reports say which engine produced the numbers, and read a greedy run as greedy.

A sandbox run on the real vLLM engine carried `label: SIMULATED` in peagle.bench/1 (that
schema's word for "not AWS hardware") and `engine: vllm 0.31.0 (CPU, tiny model)`; a
report of such runs (written as peagle.bench/2) carries the product's label of that engine,
`SANDBOX (vllm 0.31.0, CPU, tiny model)`, names the engine and never claims the tokens
were made up.
"""

from __future__ import annotations

from sm_peagle import plugins
from sm_peagle.benchmarking.report import provenance_lines
from sm_peagle.benchmarking.results import provenance
from sm_peagle.benchmarking.sweep import combine_runs

REAL = "vllm 0.31.0 (CPU, tiny model)"
NOTE = f"SANDBOX, real engine: tokens, usage and acceptance come from {REAL} on this machine"


def run(engine: str, notes: list[str], temperature: float | None) -> dict:
    return {
        "schema": "peagle.bench/1", "kind": "bench", "label": "SIMULATED", "simulated": True,
        "engine": engine, "notes": notes, "mode": "p-eagle", "k": 3, "levels": [],
        "model": "tiny-llama", "instance_type": "ml.g7e.2xlarge",
        "load": {"kind": "closed", "requests": 16, "warmup": 0, "workers": 1,
                 "max_tokens": 128, "temperature": temperature},
    }  # fmt: skip


def test_a_real_engine_sweep_names_its_engine_not_simulated_tokens() -> None:
    doc = combine_runs([run(REAL, [NOTE], 0.0)])
    assert doc["engine"] == REAL
    assert provenance(doc) == doc["label"] == "SANDBOX (vllm 0.31.0, CPU, tiny model)"
    assert provenance(run(REAL, [NOTE], 0.0)) == f"SANDBOX, {REAL}"  # one bench/1 run
    lines = provenance_lines(doc)
    assert NOTE in lines
    assert not any("made up" in line for line in lines)


def test_the_simulated_engine_is_still_called_simulated() -> None:
    doc = combine_runs([run("SIMULATED", [], None)])
    assert provenance(doc) == doc["label"] == "SANDBOX (SIMULATED)"
    # What made-up numbers mean is the plugin's sentence for its simulated label.
    said = plugins.label("SANDBOX (SIMULATED)")
    assert said is not None and said.simulated and said.caveat.startswith("SIMULATED: ")
    assert said.caveat in provenance_lines(doc)


def test_without_the_plugin_made_up_numbers_still_say_so(monkeypatch) -> None:
    """A document read where no plugin declares its label: made-up numbers still say they
    were made up, and a real engine's runs keep the words they were written with."""
    monkeypatch.setattr(plugins, "installed", lambda: ())
    monkeypatch.setattr(plugins, "label", lambda text: None)
    made_up = combine_runs([run("SIMULATED", [], None)])
    assert any(line.startswith("SIMULATED: no model ran") for line in provenance_lines(made_up))
    assert NOTE in provenance_lines(combine_runs([run(REAL, [NOTE], 0.0)]))


def test_temperature_zero_reads_as_zero_and_unset_as_the_model_default() -> None:
    greedy = " ".join(provenance_lines(combine_runs([run(REAL, [NOTE], 0.0)])))
    unset = " ".join(provenance_lines(combine_runs([run(REAL, [NOTE], None)])))
    assert "temperature 0," in greedy
    assert "temperature model default" in unset
