"""Results documents validate against docs/peagle.bench-4.schema.json, `peagle report`
reproduces them from disk (peagle.bench/1 files too), every rendering states its
provenance and label, and `recommend` reads the fields it relies on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sm_peagle import plugins
from sm_peagle.benchmarking.datasets import builtin
from sm_peagle.benchmarking.html_report import engine_of
from sm_peagle.benchmarking.metrics import RequestRecord, summarize_level
from sm_peagle.benchmarking.results import SCHEMA, bench_document, target_record
from sm_peagle.benchmarking.sweep import combine_runs, comparison, recommend_k
from sm_peagle.cli.app import main

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "peagle.bench-4.schema.json"
SCHEMA_V1 = SCHEMA_FILE.with_name("peagle.bench-1.schema.json")
IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
)


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def level(c: int, tokens_per_s: float) -> dict:
    """A level of `c` requests, all sent at t=1000 and ending 1 s later."""
    records = [
        RequestRecord(
            index=i, ok=True, sent_at=1000.0, ended_at=1001.0, ttft_s=0.1, tpot_s=0.01,
            e2e_s=1.0, input_tokens=20, output_tokens=int(tokens_per_s / c), content_chunks=10,
            finish_reason="stop", request_id=f"r{i}", itl_s=(0.01, 0.02),
        )
        for i in range(c)
    ]  # fmt: skip
    lv = summarize_level(records, concurrency=c, cpu_seconds=[0.1], usd_per_hour=4.2)
    lv["acceptance"] = {
        "status": "by definition",
        "mean_acceptance_length": 1.0,
        "source": "by definition",
    }
    return lv


def bench_doc(mode: str, k: int | None, rates: dict[int, float], simulated=True) -> dict:
    spec = None if mode == "baseline" else {"method": "eagle3", "num_speculative_tokens": k}
    return bench_document(
        provenance={
            "model": "gpt-oss-20b", "endpoint": f"ep-{mode}-{k}", "instance_type": "ml.g7e.2xlarge",
            "instance_count": 1, "usd_per_hour": 4.2, "image": IMAGE, "vllm_version": "0.18.0",
            "mode": mode, "k": k, "speculative_config": spec,
        },
        dataset=builtin().describe(),
        load={"kind": "closed", "concurrency": sorted(rates), "rates": [], "requests": 8,
              "duration_s": None, "warmup": 0, "workers": 1, "max_tokens": 64,
              "temperature": None, "retries": 0},
        levels=[level(c, v) for c, v in sorted(rates.items())],
        started_at=1000.0, ended_at=1010.0, simulated=simulated,
    )  # fmt: skip


def runs() -> list[dict]:
    return [
        bench_doc("baseline", None, {1: 50, 8: 400}),
        bench_doc("eagle3", 3, {1: 86, 8: 680}),
        bench_doc("p-eagle", 3, {1: 110, 8: 904}),
        bench_doc("p-eagle", 7, {1: 140, 8: 880}),
    ]


def report_json(path: Path, capsys) -> dict:
    assert main(["report", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_bench_document_validates_and_round_trips(validator, tmp_path, capsys):
    doc = bench_doc("p-eagle", 3, {1: 110, 8: 904})
    validator.validate(doc)
    assert SCHEMA == "peagle.bench/4"
    assert doc["schema"] == SCHEMA and doc["label"] == "SANDBOX (SIMULATED)" and doc["simulated"]
    assert doc["notes"][0].startswith("SIMULATED")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert report_json(path, capsys) == doc


def test_aws_documents_are_labelled_aws_and_keep_their_dollar_figures(validator):
    doc = bench_doc("baseline", None, {1: 50}, simulated=False)
    validator.validate(doc)
    assert doc["label"] == "AWS" and doc["notes"] == []
    # $4.20/h at 50 tok/s: 4.2 / (50 * 3600) * 1e6 dollars per million output tokens.
    assert doc["levels"][0]["usd_per_million_output_tokens"] == pytest.approx(23.3333, 1e-4)
    assert "usd_per_hour_note" not in doc
    doc["label"] = "MEASURED"  # peagle.bench/1's word is not a peagle.bench/2 label
    with pytest.raises(Exception, match="MEASURED"):
        validator.validate(doc)


def test_sandbox_documents_carry_no_cost_per_token_and_say_whose_price_it_is(validator):
    doc = bench_doc("p-eagle", 3, {1: 110, 8: 904})
    validator.validate(doc)
    # CPU (or made-up) tok/s times a GPU price is no cost of anything: none is computed.
    assert [lv["usd_per_million_output_tokens"] for lv in doc["levels"]] == [None, None]
    assert doc["usd_per_hour"] == 4.2
    assert doc["usd_per_hour_note"] == "price of the instance you would rent, not of this run"


REAL_ENGINE = "vllm 0.31.0 (CPU, tiny model)"


def real_engine_doc() -> dict:
    """A bench document of the sandbox's real vLLM engine, made as the runner makes it:
    the process points at the sandbox target (what its plugin sets when it starts), the
    document keeps the target's record and carries the label the plugin gives that
    engine."""
    spec = {"method": "eagle3", "num_speculative_tokens": 3}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PEAGLE_TARGET", "sandbox")
        mp.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:1")
        mp.setenv("PEAGLE_SANDBOX_ENGINE", "vllm")
        mp.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", REAL_ENGINE)
        target = target_record()
    return bench_document(
        provenance={
            "model": "tiny-llama", "endpoint": "ep", "instance_type": "ml.g7e.2xlarge",
            "instance_count": 1, "usd_per_hour": 4.2, "image": IMAGE, "vllm_version": "0.31.0",
            "mode": "p-eagle", "k": 3, "speculative_config": spec,
        },
        dataset=builtin().describe(),
        load={"kind": "closed", "concurrency": [1], "rates": [], "requests": 8,
              "duration_s": None, "warmup": 0, "workers": 1, "max_tokens": 64,
              "temperature": None, "retries": 0},
        levels=[level(1, 100)], started_at=1000.0, ended_at=1010.0, simulated=True,
        target=target,
    )  # fmt: skip


def test_a_document_keeps_the_target_record_under_target(validator):
    """peagle.bench/4: what answered is `target` (its name, label, engine, url), never
    the old `sandbox` key; on AWS it is null."""
    doc = real_engine_doc()
    validator.validate(doc)
    assert "sandbox" not in doc
    assert doc["target"] == {
        "name": "sandbox",
        "label": "SANDBOX (vllm 0.31.0, CPU, tiny model)",
        "engine": REAL_ENGINE,
        "url": "http://127.0.0.1:1",
    }
    assert doc["engine"] == REAL_ENGINE and "simulated" not in doc
    aws = bench_doc("baseline", None, {1: 50}, simulated=False)
    assert aws["target"] is None and "sandbox" not in aws


def test_caveats_are_the_plugin_s_words_for_the_label(validator):
    """The note a document not from AWS starts with is the caveat the plugin declares for
    its label (contract.ResultLabel), for made-up numbers and for a real engine's."""
    made_up, real = bench_doc("p-eagle", 3, {1: 110}), real_engine_doc()
    assert made_up["notes"][0] == plugins.label("SANDBOX (SIMULATED)").caveat
    assert plugins.label("SANDBOX (SIMULATED)").simulated
    assert real["notes"][0] == plugins.label(real["label"]).caveat
    assert not plugins.label(real["label"]).simulated


def test_an_older_document_s_target_record_is_still_read():
    """/2 and /3 kept the record under `sandbox`: the HTML report still finds the engine
    there when a document names none at the top level."""
    old = {**real_engine_doc(), "schema": "peagle.bench/3"}
    old["sandbox"] = old.pop("target")
    del old["engine"]
    assert engine_of(old) == (f"real vLLM engine: {REAL_ENGINE}", True)


def test_the_real_engine_sandbox_is_labelled_with_its_vllm_version(validator):
    doc = real_engine_doc()
    validator.validate(doc)
    assert doc["label"] == "SANDBOX (vllm 0.31.0, CPU, tiny model)"
    assert doc["levels"][0]["usd_per_million_output_tokens"] is None


def keys_and_strings(obj: object) -> Iterator[str]:
    """Every key and every string value in a JSON document, at any depth."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from keys_and_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from keys_and_strings(v)
    elif isinstance(obj, str):
        yield obj


def test_a_real_engine_document_carries_no_simulated_marker_and_names_its_engine(validator):
    """Issue 33: the real engine's results carry no `simulated` key or value (up to
    peagle.bench/2 they said `simulated: true`, meaning "the sandbox"); they name the
    engine that answered."""
    doc = real_engine_doc()
    assert "simulated" not in doc
    assert [t for t in keys_and_strings(doc) if "simulated" in t.lower()] == []
    assert doc["engine"] == "vllm 0.31.0 (CPU, tiny model)"
    # the schema holds it: a real engine's document saying `simulated` is not /3
    with pytest.raises(Exception, match="simulated|SIMULATED"):
        validator.validate({**doc, "simulated": True})


def test_only_the_simulated_engine_says_simulated_and_aws_says_nothing(validator):
    simulated, aws = bench_doc("p-eagle", 3, {1: 110}), bench_doc("p-eagle", 3, {1: 110}, False)
    assert (simulated["simulated"], simulated["engine"]) == (True, "SIMULATED")
    assert "simulated" not in aws and aws["label"] == "AWS"
    without = {k: v for k, v in simulated.items() if k != "simulated"}
    with pytest.raises(Exception, match="SANDBOX \\(SIMULATED\\)|SIMULATED"):
        validator.validate(without)  # the made-up engine's numbers must say so
    sweep = combine_runs([real_engine_doc()])
    validator.validate(sweep)
    assert "simulated" not in sweep and sweep["engine"] == "vllm 0.31.0 (CPU, tiny model)"
    assert combine_runs(runs())["simulated"] is True


def test_a_peagle_bench_2_real_engine_document_is_not_called_simulated(tmp_path, capsys):
    """peagle.bench/2 wrote `simulated: true` on the real engine's documents too: a report
    of one still names the engine and never says its tokens were made up."""
    old = {**real_engine_doc(), "schema": "peagle.bench/2", "simulated": True}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert main(["report", str(path), "--markdown", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "vllm 0.31.0" in text and "**SIMULATED**" not in text and "made up" not in text


def test_recommend_names_the_real_engine_s_throughput(tmp_path, capsys):
    (tmp_path / "r.json").write_text(json.dumps({**real_engine_doc(), "model": "gpt-oss-20b"}))
    assert main(["recommend", "gpt-oss-20b", "--results-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    g7e = next(c for c in doc["candidates"] if c["instance_type"] == "ml.g7e.2xlarge")
    assert g7e["basis"] == "SANDBOX (vllm 0.31.0, CPU, tiny model) throughput, not measured on AWS"
    assert "measured" not in doc["basis"].replace("not measured", "")


def test_peagle_bench_1_files_are_still_read(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    v1 = jsonschema.Draft202012Validator(json.loads(SCHEMA_V1.read_text()))
    doc = bench_doc("p-eagle", 3, {1: 110})
    # The same run as peagle.bench/1 wrote it: its label words, no bench/2 fields.
    old = {k: v for k, v in doc.items() if k not in ("metric_definitions", "usd_per_hour_note")}
    old.update(schema="peagle.bench/1", label="SIMULATED")
    old["levels"] = [
        {k: v for k, v in lv.items() if k not in ("error_rate", "itl_per_token_s", "client_late")}
        for lv in doc["levels"]
    ]
    v1.validate(old)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert report_json(path, capsys)["levels"][0]["output_tokens_per_s"] == 110


def test_sweep_document_round_trips_and_recomputes_derived_parts(validator, tmp_path, capsys):
    doc = combine_runs(runs(), extra={"elapsed_s": 12.5, "failures": [],
                                      "cleanup": {"deleted": ["a"], "kept": []}})  # fmt: skip
    validator.validate(doc)
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    assert report_json(tmp_path, capsys) == doc
    # Tampered derived parts are recomputed from the runs, never trusted.
    stale = {**doc, "table": {"columns": [], "rows": [], "unit": "output tokens/s"}}
    (tmp_path / "sweep.json").write_text(json.dumps(stale))
    assert report_json(tmp_path, capsys)["table"] == doc["table"]


def test_a_directory_of_bench_documents_combines(validator, tmp_path, capsys):
    for i, run in enumerate(runs()):
        (tmp_path / f"{i}.json").write_text(json.dumps(run))
    doc = report_json(tmp_path, capsys)
    validator.validate(doc)
    assert doc["kind"] == "sweep" and len(doc["runs"]) == 4


def test_comparison_table_and_k_recommendation():
    table = comparison(runs())
    assert table["columns"] == ["baseline", "eagle3 K=3", "p-eagle K=3", "p-eagle K=7"]
    one, eight = table["rows"]
    assert one["best_p_eagle_vs_best_eagle3"] == pytest.approx(140 / 86)
    assert one["best_p_eagle_vs_baseline"] == pytest.approx(140 / 50)
    assert eight["best_p_eagle_vs_baseline"] == pytest.approx(904 / 400)
    rec = recommend_k(runs())
    assert [(r["from"], r["to"], r["k"]) for r in rec["p-eagle"]] == [(1, 1, 7), (8, 8, 3)]
    assert [(r["from"], r["to"], r["k"]) for r in rec["eagle3"]] == [(1, 8, 3)]


def test_renderings_state_provenance_and_simulated(tmp_path, capsys):
    doc = combine_runs(runs())
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    md, csv_file = tmp_path / "r.md", tmp_path / "r.csv"
    assert main(["report", str(tmp_path), "--markdown", str(md), "--csv", str(csv_file)]) == 0
    text = md.read_text()
    for fact in (
        "SIMULATED",
        "ml.g7e.2xlarge",
        "vLLM 0.18.0",
        builtin().sha256[:16],
        "peagle-builtin (written for this project)",
        "p-eagle K=7",
        "Recommended K",
    ):
        assert fact in text, fact  # fmt: skip
    rows = csv_file.read_text().splitlines()
    assert len(rows) == 1 + 4 * 2
    assert all(r.startswith("SANDBOX (SIMULATED),") for r in rows[1:])
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "P-EAGLE" in out and "recommended p-eagle" in out


def test_report_rejects_other_files_in_one_line(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"schema": "something/9"}))
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # Bad input always names a fix (README, "Output and exit codes"): the command's help
    # when the error itself brings none.
    assert err == [
        f"error: {bad}: not a peagle.bench/1, /2, /3 or /4 results document "
        "(schema: 'something/9') (fix: see `peagle report --help`)"
    ]


def test_recommend_reads_bench_results(tmp_path, capsys):
    for i, run in enumerate(runs()):
        (tmp_path / f"{i}.json").write_text(json.dumps(run))
    (tmp_path / "sweep.json").write_text(json.dumps(combine_runs(runs())))
    assert main(["recommend", "gpt-oss-20b", "--results-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    g7e = next(c for c in doc["candidates"] if c["instance_type"] == "ml.g7e.2xlarge")
    # These documents are SIMULATED (sandbox): never called "measured" (issue 14).
    assert g7e["measured_output_tokens_per_s"] == 904
    assert g7e["basis"] == "SIMULATED throughput (SANDBOX (SIMULATED))"
    assert "SIMULATED" in doc["basis"]


def test_a_missing_acceptance_length_is_explained_where_it_is_printed(tmp_path, capsys):
    """`accept len -` in the levels table (the README tour's bench, --acceptance-wait 0)
    comes with a line under it saying why, and how to get the number."""
    from sm_peagle.benchmarking.acceptance import unavailable

    doc = bench_doc("p-eagle", 3, {1: 110, 8: 904})
    reason = "no SpecDecoding lines in the endpoint's logs"
    doc["levels"][1]["acceptance"] = unavailable(reason)
    path, md = tmp_path / "bench.json", tmp_path / "r.md"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path), "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    for text in (out, md.read_text()):
        notes = [line for line in text.splitlines() if line.startswith("accept len -")]
        assert len(notes) == 1, text
        assert notes[0].startswith(f"accept len - (p-eagle K=3 c=8): {reason}")
        assert "--acceptance-wait" in notes[0]  # the remedy
