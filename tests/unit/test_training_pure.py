"""The pure parts of `drafter train` (sm_peagle/training/): job names, the source tarball,
the auxiliary layers, the report's expected acceptance and warnings, the GPU fit, and the
wait's reading of a job that fails. Expected values come from the rules (SageMaker's name
pattern, the acceptance arithmetic of greedy verification), worked by hand here."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.catalog.instances import get_instance
from sm_peagle.errors import SpecError
from sm_peagle.training.checks import (
    DataStats,
    TargetInfo,
    check_fit,
    count_prompts,
    plan_disk,
    read_rows,
    target_layer_ids,
)
from sm_peagle.training.report import TrainingReport, expected_accepted_length
from sm_peagle.training.request import TrainingLayout, build_request, job_name
from sm_peagle.training.spec import check_train_args

NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


@pytest.mark.parametrize(
    "target",
    [
        "tiny-llama",
        "s3://bucket/some/very_long.model.name-with-dots-and_underscores-" + "x" * 80 + "/",
        "./--weird--//",
        "/",
    ],
)
def test_job_names_fit_sagemakers_pattern_and_length(target: str) -> None:
    name = job_name(target, "0123abcd")
    assert NAME.fullmatch(name) and len(name) <= 63, name
    assert name.startswith("peagle-train-") and name.endswith("-0123abcd")


@pytest.mark.parametrize(
    ("layers", "ids"),
    # vLLM's EAGLE-3 default (2, n//2, n-3) where it gives three ascending distinct layers;
    # a 4-layer target (the tiny one) reads layers 1, 2, 3 (facts 14: the default is invalid).
    # (6 layers: the default's [2, 3, 3] repeats a layer, so 1, 3, 5.)
    [(4, [1, 2, 3]), (5, [1, 2, 4]), (6, [1, 3, 5]), (7, [2, 3, 4]), (24, [2, 12, 21])],
)
def test_target_layer_ids(layers: int, ids: list[int]) -> None:
    assert target_layer_ids(layers) == ids


def test_layer_ids_are_distinct_ascending_and_inside_the_target() -> None:
    for n in range(4, 200):
        ids = target_layer_ids(n)
        assert ids == sorted(set(ids)) and len(ids) == 3 and ids[0] > 0 and ids[-1] < n, (n, ids)


def test_without_the_jobs_estimate_the_report_falls_back_to_the_trainers_numbers() -> None:
    # A report an older entrypoint wrote: depth-0 accuracy, and
    # 1 + 0.5 + 0.5*0.4 + 0.5*0.4*0.25 = 1.75; labelled as the fallback.
    assert expected_accepted_length([0.5, 0.4, 0.25]) == pytest.approx(1.75)
    assert expected_accepted_length([]) == 1.0
    r = TrainingReport.from_dict({"steps": 10, "k": 3, "per_depth_val_accuracy": [0.5, 0.4, 0.25]})
    assert r.expected_position0_acceptance == 0.5
    assert r.expected_accepted_length == pytest.approx(1.75)
    assert not r.per_round and r.warnings == []
    assert r.to_dict()["round_start_basis"].startswith("fallback")


def test_the_jobs_round_start_estimate_is_what_the_report_expects() -> None:
    # The entrypoint's keys (round_starts.py): the served position-0 rate per draft round,
    # not speculators' per-token depth-0 accuracy beside it.
    doc = {
        "steps": 120, "k": 3, "per_depth_val_accuracy": [0.339, 0.12, 0.09],
        "expected_position0_acceptance": 0.244, "expected_accepted_length": 1.41,
        "eval_position0_accuracy": 0.338, "round_start_basis": "per draft round, K=3: ...",
        "expected_per_position_acceptance": [0.244, 0.03, 0.021],
        "expected_position0_stderr": 0.04,
    }  # fmt: skip
    r = TrainingReport.from_dict(doc)
    assert r.per_round
    assert (r.expected_position0_acceptance, r.expected_accepted_length) == (0.244, 1.41)
    out = r.to_dict()
    assert out["per_depth_val_accuracy"] == [0.339, 0.12, 0.09]  # speculators' own, as is
    assert out["expected_position0_acceptance"] == 0.244 and out["expected_per_round"] is True
    assert out["round_start_basis"] == "per draft round, K=3: ..."
    assert out["expected_per_position_acceptance"] == [0.244, 0.03, 0.021]
    assert out["expected_position0_stderr"] == 0.04
    assert TrainingReport.from_dict(out).to_dict() == out  # what --json prints reads back


def test_not_learned_is_judged_on_the_depth0_accuracy_not_the_round_estimate() -> None:
    # Per round 0.04 is below 5%, but the trainer measured 6% per token: it has learned.
    doc = {"steps": 50, "k": 3, "per_depth_val_accuracy": [0.06, 0.01, 0.0],
           "expected_position0_acceptance": 0.04, "expected_accepted_length": 1.04}  # fmt: skip
    assert not [w for w in TrainingReport.from_dict(doc).warnings if "not learned" in w]


def test_the_cli_line_says_per_draft_round_and_k_or_that_it_is_the_fallback() -> None:
    from types import SimpleNamespace

    from sm_peagle.cli.train_cmd import _render

    def line(doc: dict) -> str:
        r = SimpleNamespace(
            job_name="j", status="Completed", head_uri="s3://b/h/",
            report=TrainingReport.from_dict(doc), check=None, endpoint=None, notes=[],
            warnings=[], next_step=None,
        )  # fmt: skip
        [out] = [x for x in _render(r).splitlines() if x.startswith("expect")]
        return out

    acc = {"steps": 9, "k": 3, "per_depth_val_accuracy": [0.34, 0.1, 0.08]}
    est = {"expected_position0_acceptance": 0.244, "expected_accepted_length": 1.41}
    assert line({**acc, **est}) == (
        "expect position-0 acceptance ~24% per draft round (K=3) and ~1.41 tokens per round "
        "at temperature 0 (as vLLM counts them)"
    )
    assert "~24% ± 4% per draft round" in line({**acc, **est, "expected_position0_stderr": 0.04})
    assert "below ~34% per draft round" in line(acc) and "no per-round estimate" in line(acc)


@pytest.mark.parametrize(
    ("doc", "warned"),
    [
        ({"steps": 0, "k": 3, "per_depth_val_accuracy": [0.0, 0.0, 0.0]}, True),
        ({"steps": 100, "k": 3, "per_depth_val_accuracy": [0.049, 0.0, 0.0]}, True),
        ({"steps": 100, "k": 3, "per_depth_val_accuracy": [0.05, 0.01, 0.0]}, False),
    ],
)
def test_a_head_that_has_not_learned_is_warned_about(doc: dict, warned: bool) -> None:
    r = TrainingReport.from_dict(doc)
    assert any("has not learned" in w for w in r.warnings) is warned


def test_count_prompts_reads_prompt_and_messages_rows() -> None:
    lines = [
        '{"prompt": "a"}',
        '{"prompt": "  "}',
        '{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}',
        '{"messages": [{"role": "assistant", "content": "only me"}]}',
        "",
    ]
    # The job's rule: a blank prompt is skipped, and a conversation is a row whatever its
    # roles are.
    assert count_prompts(lines, "x.jsonl") == 3
    with pytest.raises(SpecError) as e:
        count_prompts(lines[1:2] + lines[4:], "x.jsonl")
    assert e.value.field == "data"
    # The start of a larger S3 object: a cut last line is not judged.
    assert count_prompts(['{"prompt": "a"}', '{"prompt": "b"}', '{"prom'], "s3://b/k",
                         complete=False) == 2  # fmt: skip
    with pytest.raises(SpecError):
        count_prompts(['{"prompt": "a"}', '{"prompt": "b"}', '{"prom'], "x.jsonl")


TOOL_CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
PARTS = {"role": "user", "content": [{"type": "text", "text": "hi"}]}


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        # An OpenAI-style conversation with a tool call: its content is null.
        ({"messages": [{"role": "user", "content": "q"}, TOOL_CALL]}, "line 2 is neither"),
        # A content given as a list of parts.
        ({"messages": [PARTS]}, "line 2 is neither"),
        # A row of another shape mixed in.
        ({"text": "some text"}, "line 2 is neither"),
        ([1, 2], "line 2 is neither"),
    ],
)
def test_preflight_refuses_the_first_row_the_job_would_refuse(
    bad: Any, words: str, tmp_path: Path
) -> None:
    lines = [json.dumps({"prompt": "one"}), json.dumps(bad), json.dumps({"prompt": "three"})]
    with pytest.raises(SpecError) as e:
        read_rows(lines, "d.jsonl")
    assert e.value.field == "data"
    assert words in str(e.value) and "d.jsonl" in str(e.value)
    assert "line 2" in str(e.value.remedy)
    # ... and the job refuses that very line (its entrypoint, on the same rows).
    train = tmp_path
    (train / "d.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(_entrypoint().TrainError) as job:
        _entrypoint().read_prompts(train)
    assert "d.jsonl line 2 is neither" in str(job.value)


@pytest.mark.parametrize(
    ("rows", "val_fraction", "ok"),
    # speculators' split: int(n * (1 - v)) rows train, the rest validate; both non-empty.
    # 1 row at 0.1: int(0.9) = 0 train. 2 rows: int(1.8) = 1 train, 1 validation.
    # 3 rows at 0.5: int(1.5) = 1 train, 2 validation. 10 rows at 0.01: int(9.9) = 9, 1.
    [(1, 0.1, False), (2, 0.1, True), (3, 0.5, True), (10, 0.01, True)],
)
def test_preflight_refuses_too_few_rows_for_the_split(
    rows: int, val_fraction: float, ok: bool
) -> None:
    lines = [json.dumps({"prompt": f"p{i}"}) for i in range(rows)]
    if ok:
        assert read_rows(lines, "d.jsonl", val_fraction=val_fraction).rows == rows
        return
    with pytest.raises(SpecError) as e:
        read_rows(lines, "d.jsonl", val_fraction=val_fraction)
    assert e.value.field == "data" and "give at least 2 prompts" in str(e.value.remedy)


def test_the_split_of_s3_data_is_judged_only_when_all_of_it_was_read() -> None:
    one = [json.dumps({"prompt": "only"})]
    # A small object came whole in its first MiB: one row cannot be split.
    with pytest.raises(SpecError):
        read_rows(one, "s3://b/d.jsonl", complete=False)
    # The first MiB of a larger object: more rows may follow, so not judged here.
    big = [json.dumps({"prompt": "x" * (600 * 1024)})]
    stats = read_rows(big, "s3://b/d.jsonl", complete=False, total_bytes=10 << 20)
    assert stats.rows == 1 and not stats.whole
    assert "only that MiB was checked" in stats.note()


def test_local_data_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    # The job reads its channel as strict UTF-8 (a Latin-1 "é" would crash it).
    from sm_peagle.ops.training_data import local_data

    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"prompt": "caf\xe9"}\n{"prompt": "b"}\n')
    with pytest.raises(SpecError) as e:
        local_data(str(bad), 0.1)
    assert e.value.field == "data" and "not UTF-8" in str(e.value)


def test_product_and_job_read_the_same_row_rule() -> None:
    """One file, shipped to the job and imported by preflight: the same bytes."""
    from sm_peagle.training.request import source_files
    from sm_peagle.training.source import prompt_rows

    shipped = source_files()
    assert shipped["prompt_rows.py"] == Path(prompt_rows.__file__).read_bytes()
    assert "__init__.py" not in shipped and not [n for n in shipped if n.endswith(".pyc")]


def _entrypoint() -> Any:
    import importlib.util
    import sys

    source = Path(__file__).resolve().parents[2] / "sm_peagle" / "training" / "source"
    if str(source) not in sys.path:
        sys.path.insert(0, str(source))
    name = "peagle_train_pure_test"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, source / "peagle_train.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.mark.parametrize(
    "instance_type",
    [
        "ml.g5.xlarge", "ml.g6.2xlarge", "ml.g6e.12xlarge", "ml.g7e.2xlarge",
        "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge",
        "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge",
    ],
)  # fmt: skip
def test_instance_types_the_image_runs_on_are_accepted(instance_type: str) -> None:
    assert check_train_args("t", data="d", steps=1, instance_type=instance_type).instance_type


@pytest.mark.parametrize(
    ("instance_type", "words"),
    [
        ("ml.p2.xlarge", "Kepler"),  # CUDA 13 dropped it
        ("ml.p3.2xlarge", "Volta"),
        ("ml.p3dn.24xlarge", "Volta"),
        ("ml.g4dn.xlarge", "bfloat16"),  # T4
        ("ml.p6e-gb200.36xlarge", "Arm"),  # Grace; the image is x86
        ("ml.g7.2xlarge", "not a family the training image"),
        ("ml.c5.xlarge", "no NVIDIA GPU"),
        ("ml.trn1.2xlarge", "no NVIDIA GPU"),
        ("ml.nope.xlarge", "not a SageMaker training instance type"),
    ],
)
def test_instance_types_the_image_cannot_run_on_are_refused(instance_type: str, words: str) -> None:
    with pytest.raises(SpecError) as e:
        check_train_args("t", data="d", steps=1, instance_type=instance_type)
    assert e.value.field == "instance_type" and words in str(e.value)
    assert "g5, g6, g6e, g7e, p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300" in str(e.value.remedy)


def _stats(rows: int, chars_per_prompt: int) -> Any:
    lines = [json.dumps({"prompt": "x" * chars_per_prompt})] * rows
    return read_rows(lines, "d.jsonl")


def test_the_disk_is_sized_from_the_hidden_states_and_the_target() -> None:
    # The review's case: Llama-3.1-8B (H 4096, 16 GB of bf16 weights), 50,000 prompts of
    # 800 characters (200 tokens at 4 characters a token) + 256 new tokens = 456 tokens;
    # 3 aux + 1 last layer x 4096 x 2 bytes = 32,768 bytes a token: 14,942,208 bytes a
    # prompt, 747.1104 GB in all; + 16 GB target + 20 GB margin = 783.1104 GB -> 784 GB.
    info = _info(16_000_000_000)
    plan = plan_disk(_stats(50_000, 800), info, max_new_tokens=256,
                     instance_type="ml.g7e.2xlarge")  # fmt: skip
    assert plan.estimate_bytes == 783_110_400_000
    assert plan.volume_gb == 784
    assert "characters / 4" in plan.note and "local NVMe" in plan.note
    # A few prompts keep the old 200 GB floor.
    assert plan_disk(_stats(10, 800), info, max_new_tokens=256,
                     instance_type="ml.g7e.2xlarge").volume_gb == 200  # fmt: skip
    # The request asks for what the spec carries.
    spec = replace(check_train_args("t", data="d", steps=1), volume_gb=plan.volume_gb)
    layout = TrainingLayout("b", "peagle-train-t-0123abcd")
    req = build_request(spec, layout=layout, role_arn="arn:aws:iam::1:role/r", image="i/x",
                        target_uri="s3://m/", data_uri="s3://d/x.jsonl", layer_ids=[2, 16, 29],
                        draft_vocab=None, tags=[])  # fmt: skip
    assert req["ResourceConfig"]["VolumeSizeInGB"] == 784


def test_a_disk_over_the_largest_volume_is_refused() -> None:
    # 1,200,000 prompts x 456 tokens x 32,768 bytes = 17,930.6 GB > 16,384 GB.
    with pytest.raises(SpecError) as e:
        plan_disk(_stats(1_200_000, 800), _info(16_000_000_000), max_new_tokens=256,
                  instance_type="ml.p5.48xlarge")  # fmt: skip
    assert e.value.field == "data" and "16,384 GB" in str(e.value)
    assert "max_new_tokens" in str(e.value.remedy)


def test_s3_data_is_extrapolated_from_its_first_mib() -> None:
    # 1 MiB read of a 10 MiB object holding 100 rows in that MiB: about 1,000 rows.
    stats = DataStats("s3://b/d.jsonl", 100, 80_000, 1 << 20, False, 10 << 20)
    assert stats.estimated_rows == 1000
    assert DataStats("s3://b/d.jsonl", 100, 80_000, 1 << 20, False, None).estimated_rows is None
    plan = plan_disk(DataStats("s3://b/d.jsonl", 100, 80_000, 1 << 20, False, None),
                     _info(1), max_new_tokens=8, instance_type="ml.g5.xlarge")  # fmt: skip
    assert plan.volume_gb == 200 and "not estimated" in plan.note


def test_preflight_reads_the_same_peek_as_the_s3_read() -> None:
    from sm_peagle.lifecycle.training import DATA_PEEK_BYTES
    from sm_peagle.training.checks import S3_PEEK_BYTES

    assert S3_PEEK_BYTES == DATA_PEEK_BYTES


def _info(weights: int, hidden: int = 4096, vocab: int = 128256) -> TargetInfo:
    return TargetInfo("t", "LlamaForCausalLM", 32, hidden, vocab, 14336, weights)


def test_fit_counts_the_target_over_all_gpus_and_the_head_on_one() -> None:
    one = get_instance("ml.g7e.2xlarge")  # 1 x 96 GB
    four = get_instance("ml.g6e.12xlarge")  # 4 x 48 GB
    assert check_fit(_info(16_000_000_000), one, 1, None).status == "pass"  # 8B bf16
    assert check_fit(_info(140_000_000_000), one, 1, None).status == "fail"  # 70B bf16
    # 120 GB of weights: more than one L40S, less than 80% of four.
    assert check_fit(_info(120_000_000_000), four, 1, None).status == "pass"
    assert check_fit(_info(16_000_000_000), None, 1, None).status == "warn"


def test_check_train_args_refuses_an_unknown_key() -> None:
    with pytest.raises(TypeError):
        check_train_args("t", data="d", steps=1, nope=1)  # type: ignore[call-arg]


class _Sm:
    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:  # noqa: N803
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


class _Logs:
    """One stream with one line; GetLogEvents gives it until its token moves past it."""

    def get_paginator(self, _name: str) -> Any:
        class P:
            def paginate(self, **_k: Any) -> list[dict[str, Any]]:
                return [{"logStreams": [{"logStreamName": "job/algo-1-1"}]}]

        return P()

    def get_log_events(self, **kw: Any) -> dict[str, Any]:
        if kw.get("nextToken") == "f/1":
            return {"events": [], "nextForwardToken": "f/1"}
        line = {"timestamp": 1, "message": "step 1\n"}
        return {"events": [line], "nextForwardToken": "f/1"}


class _Aws:
    def __init__(self, sm: Any) -> None:
        self.sm = sm

    def client(self, service: str, **_k: Any) -> Any:
        return self.sm if service == "sagemaker" else _Logs()


def test_the_wait_says_each_transition_once_and_a_failed_job_is_one_error() -> None:
    from sm_peagle.lifecycle.training import wait_for_job
    from sm_peagle.training.errors import TrainingFailed

    states = [
        {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Starting"},
        {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Starting"},
        {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
        {"TrainingJobStatus": "Failed", "SecondaryStatus": "Failed",
         "FailureReason": "AlgorithmError: CUDA out of memory"},
    ]  # fmt: skip
    said: list[str] = []
    with pytest.raises(TrainingFailed) as e:
        wait_for_job(_Aws(_Sm(states)), "job", say=said.append, poll=0, sleep=lambda _s: None)
    assert e.value.exit_code == 1
    assert e.value.failure_reason == "AlgorithmError: CUDA out of memory"
    assert "CUDA out of memory" in e.value.one_line() and "\n" not in e.value.one_line()
    transitions = [s for s in said if s.startswith("training job job:")]
    assert transitions == [
        "training job job: InProgress (Starting)",
        "training job job: InProgress (Training)",
        "training job job: Failed (Failed)",
    ]
    assert said.count("step 1") == 1  # a log line is said once, however often it is read
