"""The entrypoint's FATAL and warning lines, word for word: they are all a user sees in
CloudWatch when a container refuses to start. Expected values come from the rules in
container/entrypoint.py's docstring (the AWS vLLM DLC's argument rules, vLLM's limits:
K in 1..128, draft TP 1 or the target's, SageMaker's port 8080)."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
import types
from pathlib import Path

import pytest

from sm_peagle.container.entrypoint import (
    Fatal,
    build_argv,
    installed_vllm,
    main,
    validate_speculative_config,
)
from sm_peagle.vllm.versions import VllmVersion
from tests.drafter_fixtures import edit_config, make_head

SPEC = "SM_VLLM_SPECULATIVE_CONFIG"
V18 = VllmVersion("0.18.0")
FIELDS = {"model", "method", "num_speculative_tokens", "parallel_drafting"}


def fatal(cfg: object, fields: set[str] | None = FIELDS, **kw) -> tuple[str, str]:
    raw = cfg if isinstance(cfg, str) else json.dumps(cfg)
    with pytest.raises(Fatal) as e:
        validate_speculative_config(raw, fields, **{"version": V18, **kw})
    return e.value.what, e.value.fix


def warnings(cfg: dict, fields: set[str] | None = FIELDS, **kw) -> list[str]:
    return validate_speculative_config(json.dumps(cfg), fields, **{"version": V18, **kw})


BASE = {"method": "eagle3", "num_speculative_tokens": 3}


@pytest.mark.parametrize(
    ("cfg", "what", "fix"),
    [
        (
            "{not json",
            f"{SPEC} is not valid JSON (Expecting property name enclosed in double quotes)",
            "set it to a JSON object",
        ),
        ("[1]", f"{SPEC} is not a JSON object", 'set it to {"method": "eagle3", ...}'),
        (
            {"num_speculative_tokens": 3},
            f'{SPEC} has no "method"',
            'add "method": "eagle3" (P-EAGLE and EAGLE-3 heads both use it)',
        ),
        (
            {**BASE, "method": "medusa2"},
            f"{SPEC} method 'medusa2' unknown to vLLM 0.18.0",
            'use "method": "eagle3" (P-EAGLE and EAGLE-3 heads both use it)',
        ),
        (
            {**BASE, "parallel_drafting": True, "disable_padded_drafter_batch": True},
            "disable_padded_drafter_batch is true, but parallel drafting needs padded batches",
            "remove disable_padded_drafter_batch (or set it false)",
        ),
        (
            {**BASE, "zz": 1, "aa": 2},
            f"{SPEC} key(s) aa, zz unknown to the installed vLLM's SpeculativeConfig",
            "remove them; vLLM rejects unknown keys after loading the model",
        ),
        (
            {**BASE, "num_speculative_tokens": 129},
            "num_speculative_tokens=129 is not a whole number in 1..128",
            "set K between 1 and 128 (vLLM's rejection-sampler limit)",
        ),
        (
            {**BASE, "num_speculative_tokens": "three"},
            "num_speculative_tokens='three' is not a whole number in 1..128",
            "set K between 1 and 128 (vLLM's rejection-sampler limit)",
        ),
        (
            {**BASE, "parallel_drafting": "maybe"},
            "parallel_drafting='maybe' is not a boolean",
            "set parallel_drafting to a boolean in JSON",
        ),
        (
            {**BASE, "draft_tensor_parallel_size": 2.5},
            "draft_tensor_parallel_size=2.5 is not a whole number",
            "set draft_tensor_parallel_size to a whole number in JSON",
        ),
        (
            {**BASE, "model": "/nonexistent/head"},
            "speculative model /nonexistent/head does not exist in the container",
            "match the path to the AdditionalModelDataSources channel "
            "(/opt/ml/additional-model-data-sources/<channel>)",
        ),
    ],
)
def test_fatal_lines(cfg, what: str, fix: str) -> None:
    fields = FIELDS | {"draft_tensor_parallel_size", "disable_padded_drafter_batch"}
    if isinstance(cfg, dict) and ("zz" in cfg):
        fields = FIELDS
    assert fatal(cfg, fields) == (what, fix)


def test_unknown_keys_against_the_version_table_without_vllm() -> None:
    what, _ = fatal({**BASE, "bogus": 1}, None)
    assert what == f"{SPEC} key(s) bogus unknown to vLLM 0.18.0"


def test_parallel_drafting_before_0_16() -> None:
    assert fatal({**BASE, "parallel_drafting": True}, None, version=VllmVersion("0.15.1")) == (
        "parallel_drafting needs vLLM >= 0.16.0; this image runs vLLM 0.15.1",
        "use an image with vLLM >= 0.16.0, or remove parallel_drafting (EAGLE-3)",
    )


@pytest.mark.parametrize("k", [1, 128])
def test_k_at_both_ends_of_the_range(k: int) -> None:
    assert warnings({**BASE, "num_speculative_tokens": k}) == []


def test_draft_tp_must_be_one_or_the_targets() -> None:
    fields = FIELDS | {"draft_tensor_parallel_size"}
    cfg = {**BASE, "draft_tensor_parallel_size": 2}
    assert fatal(cfg, fields, target_tp=4) == (
        "draft_tensor_parallel_size=2 is neither 1 nor the target's tensor_parallel_size 4",
        "set draft_tensor_parallel_size to 1 (or remove it)",
    )
    assert warnings({**cfg, "draft_tensor_parallel_size": 4}, fields, target_tp=4) == []
    assert warnings(cfg, fields, target_tp=None) == []


def test_warning_lines() -> None:
    assert warnings({"method": "eagle3", "parallel_drafting": True}, None, version=None) == [
        "vLLM version unknown: parallel_drafting support not verified",
        "vLLM version unknown: speculative config keys not checked",
        "num_speculative_tokens not set: vLLM takes it from the head, if any",
    ]
    assert warnings({**BASE, "num_speculative_tokens": "3", "parallel_drafting": "yes"}) == [
        "parallel_drafting='yes' is not a JSON bool; vLLM reads True",
        "num_speculative_tokens='3' is not a JSON integer; vLLM reads 3",
    ]


def test_a_local_head_is_checked_for_the_mode_and_k(tmp_path: Path) -> None:
    head = make_head(tmp_path / "eagle")
    cfg = {"model": str(head), "method": "eagle3", "parallel_drafting": True}
    # K unknown here (not set): the head's K rule warns, target-dependent rules warn too.
    got = warnings(cfg, None, version=None)
    assert "drafter drafter.k: K (num_speculative_tokens) not given; not checked" in got
    assert "num_speculative_tokens not set: vLLM takes it from the head, if any" in got
    with_k = warnings({**cfg, "num_speculative_tokens": 3}, None)
    assert "drafter drafter.k: K=3; the head's trained K is unknown, not verified" in with_k
    assert all(not w.startswith("drafter") or "drafter." in w for w in got)
    edit_config(head, drop=("ptd_token_id",))
    what, fix = fatal({**cfg, "num_speculative_tokens": 3}, None)
    assert what.startswith(f"drafter {head}: drafter.mask_token: config.json has no mask-token id")
    assert fix.startswith('add "ptd_token_id"')
    # The same head as plain EAGLE-3 (no parallel drafting) needs no mask token.
    assert not [w for w in warnings({**cfg, "parallel_drafting": False}, None) if "mask" in w]


def test_a_head_with_no_weights_is_fatal_with_the_checks_fix(tmp_path: Path) -> None:
    head = tmp_path / "eagle"
    head.mkdir()
    (head / "config.json").write_text(json.dumps({"hidden_size": 64, "vocab_size": 512}))
    what, fix = fatal({**BASE, "model": str(head)}, None)
    assert what.startswith(f"drafter {head}: drafter.weights: ")
    assert fix == "save the head's weights as model.safetensors"


def run(env: dict[str, str], **kw) -> tuple[int, str, list]:
    calls: list = []
    err = io.StringIO()
    kw.setdefault("vllm_probe", lambda _e: (None, V18))
    code = main(kw.pop("argv", []), env=env, exec_fn=lambda f, a: calls.append(a), err=err, **kw)
    return code, err.getvalue(), calls


def test_a_port_other_than_8080_is_fatal() -> None:
    code, log, calls = run({"HF_MODEL_ID": "m", "SM_VLLM_PORT": " 8000 "})
    assert code == 2 and not calls
    assert log == (
        "peagle-entrypoint: FATAL SM_VLLM_PORT=8000, but SageMaker only sends traffic to port "
        "8080 (fix: remove SM_VLLM_PORT)\n"
    )


def test_no_model_is_one_fatal_line() -> None:
    code, log, _ = run({})
    assert code == 2 and log == (
        "peagle-entrypoint: FATAL no model to serve: SM_VLLM_MODEL unset, /opt/ml/model empty, "
        "HF_MODEL_ID unset (fix: give the model a ModelDataSource, or set SM_VLLM_MODEL or "
        "HF_MODEL_ID)\n"
    )


def test_sandbox_opt_ml_root_stands_for_opt_ml(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    env = {"PEAGLE_OPT_ML_ROOT": str(tmp_path), "HF_MODEL_ID": "hub/m"}
    _, _, calls = run(env)
    assert calls == [["vllm", "serve", str(tmp_path / "model"), "--port", "8080"]]
    # An explicit model_dir wins over the variable; an empty <root>/model is skipped.
    _, _, calls = run(env, model_dir=str(tmp_path / "elsewhere"))
    assert calls[0][2] == "hub/m"
    (tmp_path / "model" / "config.json").unlink()
    assert run(env)[2][0][2] == "hub/m"


def test_target_tp_defaults_to_one() -> None:
    cfg = json.dumps({**BASE, "draft_tensor_parallel_size": 2})
    probe = lambda _e: (FIELDS | {"draft_tensor_parallel_size"}, V18)  # noqa: E731
    code, log, _ = run({"HF_MODEL_ID": "m", SPEC: cfg}, vllm_probe=probe)
    assert code == 2 and "tensor_parallel_size 1 (fix:" in log
    env = {"HF_MODEL_ID": "m", SPEC: cfg, "SM_VLLM_TENSOR_PARALLEL_SIZE": "2"}
    assert run(env, vllm_probe=probe)[0] == 0


def test_the_probe_sees_the_containers_environment() -> None:
    seen = []
    env = {"HF_MODEL_ID": "m", SPEC: json.dumps(BASE), "PEAGLE_VLLM_VERSION": "0.18.0"}
    run(env, vllm_probe=lambda e: seen.append(dict(e)) or (FIELDS, V18))
    assert seen == [env]


def test_defaults_read_sys_argv_and_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["entrypoint", "--seed", "7"])  # argv[0] is the program
    monkeypatch.setenv("HF_MODEL_ID", "from-os-environ")
    for name in [n for n in __import__("os").environ if n.startswith("SM_VLLM_")]:
        monkeypatch.delenv(name)
    calls: list = []
    code = main(exec_fn=lambda f, a: calls.append(a), err=io.StringIO(), model_dir="/nonexistent")
    assert code == 0
    assert calls == [["vllm", "serve", "from-os-environ", "--port", "8080", "--seed", "7"]]


def test_installed_vllm_reads_the_dataclass_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclasses.dataclass
    class SpeculativeConfig:
        method: str = "eagle3"
        num_speculative_tokens: int = 1
        derived: int = dataclasses.field(default=0, init=False)

    vllm = types.ModuleType("vllm")
    vllm.__version__ = "0.19.1"
    config = types.ModuleType("vllm.config")
    config.SpeculativeConfig = SpeculativeConfig
    vllm.config = config
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.config", config)
    fields, version = installed_vllm({"PEAGLE_VLLM_VERSION": "0.18.0"})
    assert fields == {"method", "num_speculative_tokens"} and version == VllmVersion("0.19.1")
    del vllm.__version__  # no version attribute: the variable's, and still the fields
    assert installed_vllm({"PEAGLE_VLLM_VERSION": "0.18.0"}) == (
        {"method", "num_speculative_tokens"},
        VllmVersion("0.18.0"),
    )


def test_installed_vllm_without_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import fails
    assert installed_vllm({"PEAGLE_VLLM_VERSION": "0.18.0"}) == (None, VllmVersion("0.18.0"))
    assert installed_vllm({"PEAGLE_VLLM_VERSION": "not-a-version"}) == (None, None)
    assert installed_vllm({}) == (None, None)


def test_build_argv_model_dir_argument() -> None:
    argv = build_argv({}, model_dir_nonempty=lambda: True, model_dir="/srv/model")
    assert argv == ["vllm", "serve", "/srv/model", "--port", "8080"]


def test_the_head_is_judged_for_the_images_vllm(tmp_path: Path) -> None:
    # A head with only mask_token_id: vLLM 0.18.0 reads ptd_token_id alone, newer ones both.
    head = make_head(tmp_path / "eagle")
    edit_config(head, drop=("ptd_token_id",), mask_token_id=511)
    cfg = {**BASE, "model": str(head), "parallel_drafting": True}
    what, _ = fatal(cfg, None, version=V18)
    assert "has only mask_token_id, which vLLM 0.18.0 does not read" in what
    assert not [w for w in warnings(cfg, None, version=VllmVersion("0.28.0")) if "mask" in w]


def test_an_unreadable_head_is_fatal_with_its_remedy(tmp_path: Path, monkeypatch) -> None:
    import sm_peagle.drafter as drafter
    from sm_peagle.errors import SpecError

    head = make_head(tmp_path / "eagle")
    cfg = {**BASE, "model": str(head)}
    monkeypatch.setattr(
        drafter, "inspect_drafter", lambda p: (_ for _ in ()).throw(SpecError("gone"))
    )
    assert fatal(cfg, None) == (f"drafter {head}: gone", "check the drafter channel")
    monkeypatch.setattr(
        drafter, "inspect_drafter", lambda p: (_ for _ in ()).throw(SpecError("gone", remedy="r"))
    )
    assert fatal(cfg, None) == (f"drafter {head}: gone", "r")


def test_lax_values_of_the_other_keys() -> None:
    fields = FIELDS | {"draft_tensor_parallel_size", "disable_padded_drafter_batch"}
    assert warnings({**BASE, "draft_tensor_parallel_size": "1"}, fields, target_tp=1) == [
        "draft_tensor_parallel_size='1' is not a JSON int; vLLM reads 1"
    ]
    cfg = {**BASE, "parallel_drafting": True, "disable_padded_drafter_batch": "maybe"}
    assert fatal(cfg, fields) == (
        "disable_padded_drafter_batch='maybe' is not a boolean",
        "set disable_padded_drafter_batch to a boolean in JSON",
    )


def test_parallel_drafting_from_0_16_0_on() -> None:
    cfg = {**BASE, "parallel_drafting": True}
    assert warnings(cfg, None, version=VllmVersion("0.16.0")) == []
