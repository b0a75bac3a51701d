"""The container entrypoint as Python: env -> argv (the DLC's rules) and the fail-fast
checks. Nothing is exec'd: `main` takes an injected exec function."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from sm_peagle.container.entrypoint import (
    Fatal,
    build_argv,
    installed_vllm,
    main,
    validate_speculative_config,
)
from sm_peagle.vllm.versions import VllmVersion, speculative_keys
from tests.drafter_fixtures import make_head

SPEC = '{"model":"/opt/ml/additional-model-data-sources/eagle","method":"eagle3","num_speculative_tokens":3,"parallel_drafting":true}'  # noqa: E501
HEAD = ["vllm", "serve"]
PORT = ["--port", "8080"]

# (id, env, /opt/ml/model non-empty?, expected argv)
TABLE: list[tuple[str, dict[str, str], bool, list[str]]] = [
    ("hf-model-only", {"HF_MODEL_ID": "org/m"}, False, HEAD + ["org/m"] + PORT),
    (
        "sm-vllm-model-wins",
        {"SM_VLLM_MODEL": "/models/x", "HF_MODEL_ID": "org/m"},
        True,
        HEAD + ["/models/x"] + PORT,
    ),
    ("opt-ml-model-beats-hf", {"HF_MODEL_ID": "org/m"}, True, HEAD + ["/opt/ml/model"] + PORT),
    ("opt-ml-model-alone", {}, True, HEAD + ["/opt/ml/model"] + PORT),
    (
        "hf-fallback-when-model-dir-empty",
        {"HF_MODEL_ID": "/opt/ml/model", "SM_VLLM_MODEL": ""},
        False,
        HEAD + ["/opt/ml/model"] + PORT,
    ),
    (
        "speculative-config-one-argument",
        {"HF_MODEL_ID": "m", "SM_VLLM_SPECULATIVE_CONFIG": SPEC},
        False,
        HEAD + ["m"] + PORT + ["--speculative-config", SPEC],
    ),
    (
        "json-object-with-list-inside-stays-whole",
        {"HF_MODEL_ID": "m", "SM_VLLM_HF_OVERRIDES": '{"a": [1, 2]}'},
        False,
        HEAD + ["m"] + PORT + ["--hf-overrides", '{"a": [1, 2]}'],
    ),
    (
        "true-is-bare-flag",
        {"HF_MODEL_ID": "m", "SM_VLLM_ENFORCE_EAGER": "true"},
        False,
        HEAD + ["m"] + PORT + ["--enforce-eager"],
    ),
    (
        "TRUE-any-case",
        {"HF_MODEL_ID": "m", "SM_VLLM_TRUST_REMOTE_CODE": "True"},
        False,
        HEAD + ["m"] + PORT + ["--trust-remote-code"],
    ),
    (
        "false-drops-flag",
        {"HF_MODEL_ID": "m", "SM_VLLM_ENFORCE_EAGER": "false"},
        False,
        HEAD + ["m"] + PORT,
    ),
    (
        "empty-is-bare-flag",
        {"HF_MODEL_ID": "m", "SM_VLLM_DISABLE_LOG_REQUESTS": ""},
        False,
        HEAD + ["m"] + PORT + ["--disable-log-requests"],
    ),
    (
        # vLLM json.loads --allowed-origins itself: the DLC (v2.4) keeps the array whole.
        "allowed-origins-array-stays-one-argument",
        {"HF_MODEL_ID": "m", "SM_VLLM_ALLOWED_ORIGINS": '["https://a", "https://b"]'},
        False,
        HEAD + ["m"] + PORT + ["--allowed-origins", '["https://a", "https://b"]'],
    ),
    (
        "json-array-one-arg-per-element",
        {"HF_MODEL_ID": "m", "SM_VLLM_API_KEY": '["k1", "k2"]'},
        False,
        HEAD + ["m"] + PORT + ["--api-key", "k1", "k2"],
    ),
    (
        "json-array-of-numbers",
        {"HF_MODEL_ID": "m", "SM_VLLM_CUDA_GRAPH_SIZES": "[1, 2, 4]"},
        False,
        HEAD + ["m"] + PORT + ["--cuda-graph-sizes", "1", "2", "4"],
    ),
    (
        "malformed-array-is-one-argument",
        {"HF_MODEL_ID": "m", "SM_VLLM_X": "[not json"},
        False,
        HEAD + ["m"] + PORT + ["--x", "[not json"],
    ),
    (
        "ints-and-floats",
        {
            "HF_MODEL_ID": "m",
            "SM_VLLM_MAX_MODEL_LEN": "8192",
            "SM_VLLM_GPU_MEMORY_UTILIZATION": "0.9",
        },
        False,
        HEAD + ["m"] + PORT + ["--gpu-memory-utilization", "0.9", "--max-model-len", "8192"],
    ),
    (
        "underscores-to-dashes-lower-case",
        {"HF_MODEL_ID": "m", "SM_VLLM_TENSOR_PARALLEL_SIZE": "2"},
        False,
        HEAD + ["m"] + PORT + ["--tensor-parallel-size", "2"],
    ),
    (
        "unrelated-env-ignored",
        {
            "HF_MODEL_ID": "m",
            "PATH": "/usr/bin",
            "HF_TOKEN": "x",
            "SAGEMAKER_PROGRAM": "inference.py",
            "SM_VLLMX_FOO": "1",
            "sm_vllm_lower": "1",
            "SM_VLLM_": "bare-prefix",
        },
        False,
        HEAD + ["m"] + PORT,
    ),
    (
        "sorted-by-env-name",
        {
            "HF_MODEL_ID": "m",
            "SM_VLLM_ZZ": "1",
            "SM_VLLM_MAX_NUM_SEQS": "64",
            "SM_VLLM_AA": "2",
        },
        False,
        HEAD + ["m"] + PORT + ["--aa", "2", "--max-num-seqs", "64", "--zz", "1"],
    ),
    (
        "port-first-and-sm-vllm-port-not-a-flag",
        {"HF_MODEL_ID": "m", "SM_VLLM_A": "1", "SM_VLLM_PORT": "8080"},
        False,
        HEAD + ["m"] + PORT + ["--a", "1"],
    ),
]


@pytest.mark.parametrize(
    ("env", "nonempty", "expected"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE]
)
def test_env_to_argv(env: dict[str, str], nonempty: bool, expected: list[str]) -> None:
    assert build_argv(env, model_dir_nonempty=lambda: nonempty) == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [("MAX_NUM_SEQS", "64"), ("A", "x"), ("KV_CACHE_DTYPE", "fp8_e5m2"), ("X_1_Y", "a b")],
)
def test_any_sm_vllm_variable_becomes_its_flag(name: str, value: str) -> None:
    # The DLC rule: strip SM_VLLM_, lower-case, "_" -> "-"; a plain value is one argument.
    argv = build_argv(
        {"HF_MODEL_ID": "m", f"SM_VLLM_{name}": value}, model_dir_nonempty=lambda: False
    )
    assert argv == HEAD + ["m"] + PORT + ["--" + name.lower().replace("_", "-"), value]


def test_no_model_is_fatal() -> None:
    with pytest.raises(Fatal, match="no model"):
        build_argv({"SM_VLLM_X": "1"}, model_dir_nonempty=lambda: False)


def test_planned_env_round_trips(tmp_path: Path) -> None:
    """What `peagle plan` sends for the P-EAGLE template arrives as those exact flags."""
    from sm_peagle import plan

    p = plan(Path("templates/specs/gpt-oss-20b-p-eagle.yaml"))
    env = p.create_model["PrimaryContainer"]["Environment"]
    argv = build_argv(env, model_dir_nonempty=lambda: True)
    assert argv[:5] == HEAD + ["/opt/ml/model"] + PORT
    i = argv.index("--speculative-config")
    assert json.loads(argv[i + 1]) == p.speculative_config
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"


# --- main: validation, logging, exec -----------------------------------------------------
def _run(
    env: dict[str, str],
    version: str | None = "0.18.0",
    fields: set[str] | None = None,
    argv: list[str] | None = None,
):
    calls: list[tuple[str, list[str]]] = []
    err = io.StringIO()
    code = main(
        argv or [],
        env=env,
        exec_fn=lambda f, a: calls.append((f, a)),
        model_dir="/nonexistent-model-dir",
        vllm_probe=lambda _e: (fields, VllmVersion(version) if version else None),
        err=err,
    )
    return code, err.getvalue(), calls


def _fatal(env: dict[str, str], needle: str, **kw) -> str:
    code, log, calls = _run(env, **kw)
    assert code == 2 and not calls  # ends before vLLM is ever exec'd
    lines = [ln for ln in log.splitlines() if "FATAL" in ln]
    assert len(lines) == 1, log
    assert lines[0].startswith("peagle-entrypoint: FATAL ") and "(fix: " in lines[0]
    assert needle in lines[0], lines[0]
    return lines[0]


def _env(spec: dict | str, **extra: str) -> dict[str, str]:
    raw = spec if isinstance(spec, str) else json.dumps(spec)
    return {"HF_MODEL_ID": "m", "SM_VLLM_SPECULATIVE_CONFIG": raw, **extra}


def test_unknown_key_for_0_18() -> None:
    line = _fatal(
        _env({"method": "eagle3", "num_speculative_tokens": 3, "disable_by_batch_size": 4}),
        "disable_by_batch_size",
    )
    assert "vLLM 0.18.0" in line


def test_unknown_key_against_installed_dataclass_fields() -> None:
    fields = set(speculative_keys(VllmVersion("0.18.0"))) - {"quantization"}
    line = _fatal(
        _env({"method": "eagle3", "num_speculative_tokens": 3, "quantization": "fp8"}),
        "quantization",
        fields=fields,
    )
    assert "installed vLLM" in line


def test_missing_method() -> None:
    _fatal(_env({"num_speculative_tokens": 3}), '"method"')


@pytest.mark.parametrize("k", [0, 129, -1, "x", 2.5, None, [3]])
def test_bad_k(k: object) -> None:
    if k is None:  # JSON null: K absent, a warning (vLLM takes it from the head)
        return
    _fatal(_env({"method": "eagle3", "num_speculative_tokens": k}), "num_speculative_tokens")


@pytest.mark.parametrize(("k", "read"), [("3", 3), (3.0, 3), (True, 1), (" 7", 7)])
def test_loose_k_is_read_as_vllm_reads_it(k: object, read: int) -> None:
    # vLLM's pydantic SpeculativeConfig (lax mode) accepts these (conformance tier,
    # tests/conformance/test_configs.py): the entrypoint warns instead of refusing.
    code, log, calls = _run(_env({"method": "eagle3", "num_speculative_tokens": k}))
    assert code == 0 and calls, log
    assert f"vLLM reads {read}" in log


def test_unknown_method() -> None:
    _fatal(_env({"method": "eagle4", "num_speculative_tokens": 3}), "'eagle4'")


def test_loose_parallel_drafting_counts_as_parallel() -> None:
    spec = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": "yes"}
    _fatal(_env({**spec, "disable_padded_drafter_batch": 1}), "disable_padded_drafter_batch")
    _fatal(_env({**spec, "parallel_drafting": "maybe"}), "parallel_drafting")


@pytest.mark.parametrize(("dtp", "tp", "ok"), [(2, "1", False), (1, "2", True), (2, "2", True)])
def test_draft_tensor_parallel_size(dtp: int, tp: str, ok: bool) -> None:
    env = _env(
        {"method": "eagle3", "num_speculative_tokens": 3, "draft_tensor_parallel_size": dtp},
        SM_VLLM_TENSOR_PARALLEL_SIZE=tp,
    )
    if ok:
        assert _run(env)[0] == 0
    else:
        _fatal(env, "draft_tensor_parallel_size")


def test_parallel_drafting_on_0_15_1() -> None:
    line = _fatal(
        _env({"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}),
        "parallel_drafting",
        version="0.15.1",
    )
    assert "0.15.1" in line and ">= 0.16.0" in line


def test_padded_batch_disabled_with_parallel_drafting() -> None:
    spec = {
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
        "disable_padded_drafter_batch": True,
    }
    _fatal(_env(spec), "disable_padded_drafter_batch")


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]"])
def test_not_a_json_object(raw: str) -> None:
    _fatal(_env(raw), "SM_VLLM_SPECULATIVE_CONFIG")


def test_bad_drafter_dir(tmp_path: Path) -> None:
    head = make_head(tmp_path / "eagle")
    (head / "config.json").write_text("{not json")  # a head vLLM cannot even parse
    spec = {"model": str(head), "method": "eagle3", "num_speculative_tokens": 3}
    _fatal(_env(spec), f"drafter {head}")


def test_drafter_path_missing() -> None:
    spec = {"model": "/opt/ml/additional-model-data-sources/nope", "method": "eagle3"}
    _fatal(_env(spec), "does not exist")


def test_no_model_exits_2() -> None:
    _fatal({"SM_VLLM_MAX_MODEL_LEN": "1"}, "no model")


def test_port_other_than_8080() -> None:
    _fatal({"HF_MODEL_ID": "m", "SM_VLLM_PORT": "8000"}, "SM_VLLM_PORT=8000")


def test_good_head_execs_with_exact_argv(tmp_path: Path) -> None:
    head = make_head(tmp_path / "eagle")
    spec = {
        "model": str(head),
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    env = _env(spec, SM_VLLM_MAX_MODEL_LEN="4096")
    code, log, calls = _run(env, argv=["serve"])  # SageMaker's `<image> serve`
    assert code == 0, log
    # By the DLC rules: the model, the port, then the flags sorted by variable name.
    expected = HEAD + ["m"] + PORT + ["--max-model-len", "4096"]
    expected += ["--speculative-config", env["SM_VLLM_SPECULATIVE_CONFIG"]]
    assert calls == [("vllm", expected)]
    assert "FATAL" not in log
    assert "peagle-entrypoint: exec vllm serve m --port 8080 --max-model-len 4096" in log
    assert "--speculative-config" in log


def test_extra_args_follow_the_flags() -> None:
    code, _log, calls = _run({"HF_MODEL_ID": "m"}, argv=["serve", "--seed", "1"])
    assert code == 0 and calls[0][1] == HEAD + ["m"] + PORT + ["--seed", "1"]


def test_without_speculative_config_vllm_is_not_probed() -> None:
    def probe(_env: object) -> tuple[None, None]:
        raise AssertionError("probed")

    calls: list = []
    code = main(
        [],
        env={"HF_MODEL_ID": "m"},
        exec_fn=lambda f, a: calls.append(a),
        vllm_probe=probe,
        err=io.StringIO(),
    )
    assert code == 0 and calls


def test_unknown_version_warns_instead_of_guessing() -> None:
    code, log, calls = _run(
        _env({"method": "eagle3", "num_speculative_tokens": 3, "anything": 1}), version=None
    )
    assert code == 0 and calls
    assert "keys not checked" in log


def test_installed_vllm_falls_back_to_env_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError
    fields, version = installed_vllm({"PEAGLE_VLLM_VERSION": "0.18.0"})
    assert fields is None and version == VllmVersion("0.18.0")
    assert installed_vllm({}) == (None, None)


def test_validate_returns_warnings_for_valid_config() -> None:
    warnings = validate_speculative_config(
        json.dumps({"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}),
        set(speculative_keys(VllmVersion("0.18.0"))),
        version=VllmVersion("0.18.0"),
    )
    assert warnings == []


def test_missing_vllm_binary_is_fatal_not_a_traceback() -> None:
    def no_vllm(_file: str, _argv: list[str]) -> None:
        raise FileNotFoundError(2, "No such file or directory")

    err = io.StringIO()
    assert main([], env={"HF_MODEL_ID": "m"}, exec_fn=no_vllm, err=err) == 2
    assert "peagle-entrypoint: FATAL cannot exec vllm" in err.getvalue()
