"""Bench provenance names the model runner and the speculative sampling methods the engine
used, read from its own start-up log, and whether that configuration is lossy (issue 28,
item 3). The lines below are vLLM 0.31.0's, as the sandbox's real engine logged them
(`peagle --sandbox logs`, 2026-11-26), trimmed to what is read."""

from __future__ import annotations

import pytest

from sm_peagle.benchmarking.engine_run import engine_run_from_lines
from sm_peagle.vllm.lossy import lossy_reason

ARGS = (
    "(APIServer pid=8503) INFO 11-26 05:15:49 [api_utils.py:286] non-default args: "
    "{'model_tag': '/opt/ml/model', 'host': '127.0.0.1', 'port': 56955, 'model': "
    "'/opt/ml/model', 'enforce_eager': True, 'speculative_config': {'model': "
    "'/opt/ml/additional-model-data-sources/eagle', 'method': 'eagle3', "
    "'num_speculative_tokens': 3, 'parallel_drafting': True}}"
)
V1 = (
    "(APIServer pid=8503) WARNING 11-26 05:15:49 [vllm.py:747] Model Runner V2 requires "
    "Triton; using the V1 model runner instead."
)
CONFIG = (
    "(EngineCore pid=9858) INFO 11-26 05:16:00 [core.py:129] Initializing a V1 LLM engine "
    "(v0.31.0) with config: model='/opt/ml/model', speculative_config=SpeculativeConfig("
    "method='eagle3', model='/opt/ml/additional-model-data-sources/eagle', "
    "num_spec_tokens=3), per_request_spec_decode_metrics='none', seed=0"
)
LOADING = (
    "(Worker pid=10441) INFO 11-26 05:16:14 [cpu_model_runner.py:69] Starting to load "
    "model /opt/ml/model..."
)
SPEC = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}


def test_the_real_engines_log_gives_v1_and_vllms_default_methods() -> None:
    run = engine_run_from_lines([ARGS, V1, CONFIG, LOADING], vllm_version="0.31.0")
    assert run["model_runner"] == "V1"
    assert "using the V1 model runner instead" in run["model_runner_line"]
    # The engine's speculative config sets neither method: vLLM 0.31.0's own defaults
    # apply (its config/speculative.py, lines 530 and 601: "standard", "greedy").
    assert run["rejection_sample_method"] == "standard"
    assert run["rejection_sample_method_from"] == "vLLM 0.31.0 default (not set)"
    assert run["draft_sample_method"] == "greedy"
    assert run["draft_sample_method_from"] == "vLLM 0.31.0 default (not set)"
    assert run["per_request_spec_decode_metrics"] == "none"
    ran = {**SPEC, "rejection_sample_method": "standard", "draft_sample_method": "greedy"}
    assert run["lossy"] is (lossy_reason(ran, "0.31.0") is not None) is False


def test_a_v2_runner_and_a_method_set_on_the_command_line_are_read_as_logged() -> None:
    args = ARGS.replace("'parallel_drafting': True}", "'rejection_sample_method': 'fly'}")
    v2 = "(Worker pid=1) INFO 11-26 05:16:14 [gpu_worker.py:479] Using V2 Model Runner"
    run = engine_run_from_lines([args, v2], vllm_version="0.33.0")
    assert run["model_runner"] == "V2"
    assert run["rejection_sample_method"] == "fly"
    assert run["rejection_sample_method_from"] == "engine log"
    # Lossy exactly when the facts' per-version rule says so, with vLLM's own words.
    why = lossy_reason({"model": "/opt/ml/additional-model-data-sources/eagle",
                        "method": "eagle3", "num_speculative_tokens": 3,
                        "rejection_sample_method": "fly", "draft_sample_method": "greedy"},
                       "0.33.0")  # fmt: skip
    assert run["lossy"] is (why is not None)
    assert run.get("lossy_reason") == why


def test_only_the_v1_runners_module_names_the_runner_when_nothing_else_does() -> None:
    assert engine_run_from_lines([LOADING])["model_runner"] == "V1"
    nothing = engine_run_from_lines(["(APIServer pid=1) INFO nothing here"])
    assert nothing["model_runner"] is None and nothing["rejection_sample_method"] is None
    assert nothing["lossy"] is None


def test_without_an_args_line_the_deployed_config_stands_in_and_says_so() -> None:
    run = engine_run_from_lines(
        [V1], speculative_config={**SPEC, "draft_sample_method": "probabilistic"},
        vllm_version="0.31.0",
    )  # fmt: skip
    assert run["draft_sample_method"] == "probabilistic"
    assert run["draft_sample_method_from"] == "deployed config"
    assert run["rejection_sample_method"] == "standard"


# vLLM 0.18.0 (JumpStart's image, the sandbox's gpt-oss-20b) logs the same `non-default
# args` line; its config/speculative.py declares, line 175,
# `rejection_sample_method: RejectionSampleMethod = "strict"` (strict|probabilistic) and
# has no draft_sample_method at all.
ARGS_018 = ARGS.replace("'parallel_drafting': True}", "'parallel_drafting': False}")


def test_a_0_18_0_engine_that_sets_no_method_ran_0_18_0s_default_strict() -> None:
    run = engine_run_from_lines([ARGS_018], vllm_version="0.18.0")
    assert run["rejection_sample_method"] == "strict"
    assert run["rejection_sample_method_from"] == "vLLM 0.18.0 default (not set)"
    # No such setting in 0.18.0: null, never 0.31.0's "greedy".
    assert run["draft_sample_method"] is None
    assert run["draft_sample_method_from"] == (
        "not set; vLLM 0.18.0 has no draft_sample_method setting"
    )
    assert run["lossy"] is False  # 0.18.0's source calls no setting lossy


def test_a_0_17_0_engine_has_neither_method() -> None:
    run = engine_run_from_lines([ARGS_018], vllm_version="0.17.0")
    for key in ("rejection_sample_method", "draft_sample_method"):
        assert run[key] is None
        assert run[f"{key}_from"] == f"not set; vLLM 0.17.0 has no {key} setting"


@pytest.mark.parametrize("version", [None, "latest"])
def test_an_unknown_version_states_no_default(version: str | None) -> None:
    run = engine_run_from_lines([ARGS, V1], vllm_version=version)
    for key in ("rejection_sample_method", "draft_sample_method"):
        assert run[key] is None
        assert run[f"{key}_from"] == "not set; vLLM version unknown"
    assert run["lossy"] is None


def test_a_method_the_log_sets_is_kept_whatever_the_version() -> None:
    args = ARGS_018.replace("False}", "False, 'rejection_sample_method': 'probabilistic'}")
    run = engine_run_from_lines([args], vllm_version="0.18.0")
    assert run["rejection_sample_method"] == "probabilistic"
    assert run["rejection_sample_method_from"] == "engine log"


def test_a_version_newer_than_the_data_says_which_version_answered() -> None:
    from sm_peagle.vllm.facts import covered

    newest = covered()[-1]
    run = engine_run_from_lines([ARGS, V1], vllm_version="9.0.0")
    assert run["rejection_sample_method_from"] == (
        f"vLLM 9.0.0 (read as {newest}) default (not set)"
    )


def test_the_latest_start_wins() -> None:
    older = ARGS.replace("'parallel_drafting': True}", "'rejection_sample_method': 'synthetic'}")
    run = engine_run_from_lines([older, V1, ARGS, V1], vllm_version="0.31.0")
    assert run["rejection_sample_method"] == "standard"
    assert run["rejection_sample_method_from"] == "vLLM 0.31.0 default (not set)"


def test_reports_say_what_the_engine_ran() -> None:
    from sm_peagle.benchmarking.report import provenance_lines

    run = engine_run_from_lines([ARGS, V1, CONFIG], vllm_version="0.31.0")
    doc = {"schema": "peagle.bench/2", "kind": "bench", "label": "AWS", "mode": "p-eagle",
           "k": 3, "levels": [], "engine_run": run}  # fmt: skip
    [line] = [ln for ln in provenance_lines(doc) if "model runner" in ln]
    assert line.startswith("p-eagle K=3: model runner V1, rejection sampling standard, lossless")
    lossy = {**run, "lossy": True}
    [line] = [ln for ln in provenance_lines({**doc, "engine_run": lossy}) if "runner" in ln]
    assert "LOSSY: outputs may differ from the target model's" in line
