"""Cases for test_configs.py: peagle's plans as engine argv, and the bad-config table.

Pure (main venv). A good case is: plan (catalog model x mode x K, targeting the engine's
vLLM version) -> the model's Environment -> the entrypoint's `build_argv` -> the
`/opt/ml` paths replaced by the tiny models -> only the CPU/tiny overrides of
`CPU_OVERRIDES` applied. Every other flag and every speculative key passes unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sm_peagle.catalog.models import MODELS
from sm_peagle.container.entrypoint import MODEL_DIR, SPEC_ENV, build_argv
from sm_peagle.errors import SpecError
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.options import spec_from_options
from sm_peagle.vllm.speculative import MOUNT_ROOT

MODES = ("baseline", "eagle3", "p-eagle")
KS = (1, 3, 7)
TINY_MAX_LEN = 2048  # the tiny target's max_position_embeddings (vllm_engine/spec.py)
PLACEHOLDERS = {
    "model_data": "s3://peagle-conformance/model/",
    "drafter": "s3://peagle-conformance/head/",
}

# The ONLY changes made to what peagle emits, each with its reason.
CPU_OVERRIDES: dict[str, str] = {
    MODEL_DIR: "-> models/tiny-llama: the tiny target stands in for the model's weights",
    f"{MOUNT_ROOT}/<channel>": "-> models/p-eagle-aligned (p-eagle) or eagle3-aligned "
    "(eagle3): a tiny head of the matching kind stands in for the drafter channel",
    "--max-model-len": f"-> min(planned, {TINY_MAX_LEN}): the tiny target's context length",
    "--tensor-parallel-size": "-> 1: one CPU rank (2 cores), no GPUs",
    "--quantization": "dropped: the tiny model is bf16; quantized kernels are GPU-only",
    "speculative max_model_len": f"-> min(planned, {TINY_MAX_LEN}), as --max-model-len",
    "speculative draft_tensor_parallel_size": "-> 1, as --tensor-parallel-size",
}


def case_ids() -> list[tuple[str, str, int | None]]:
    out: list[tuple[str, str, int | None]] = []
    for m in MODELS:
        out.append((m.alias, "baseline", None))  # K does not exist without speculation
        out += [(m.alias, mode, k) for mode in MODES[1:] for k in KS]
    return out


def plan_for(alias: str, mode: str, k: int | None, version: str) -> Any:
    """The plan for `version`; S3 placeholders only where offline planning needs them;
    an explicit image tag when AWS published no image for `version` (e.g. 0.32.0)."""
    opts: dict[str, Any] = {"mode": mode, "k": k, "vllm_version": version}
    try:
        p = plan(spec_from_options(alias, **opts))
    except SpecError as e:
        if "published no SageMaker vLLM image" not in str(e):
            raise
        opts["image"] = (
            f"763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:{version}"
            "-gpu-py312-cu130-ubuntu24.04-sagemaker"
        )
        p = plan(spec_from_options(alias, **opts))
    missing = {c.name for c in p.checks if c.status == "fail"}
    if "model_data" in missing:
        opts["model_data"] = PLACEHOLDERS["model_data"]
    if "drafter.source" in missing:
        opts["drafter"] = PLACEHOLDERS["drafter"]
    if missing & {"model_data", "drafter.source"}:
        p = plan(spec_from_options(alias, **opts))
    return p


def engine_argv(p: Any, models: Path, mode: str) -> tuple[list[str], list[str]]:
    """(argv for the engine, the overrides applied) from a plan's Environment."""
    container = p.create_model["PrimaryContainer"]
    env = container["Environment"]
    argv = build_argv(env, model_dir_nonempty=lambda: "ModelDataSource" in container)
    applied: list[str] = []
    out: list[str] = []
    head = models / ("p-eagle-aligned" if mode == "p-eagle" else "eagle3-aligned")
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a == MODEL_DIR:
            out.append(str(models / "tiny-llama"))
            applied.append(MODEL_DIR)
        elif a == "--max-model-len" and nxt is not None and int(nxt) > TINY_MAX_LEN:
            out += [a, str(TINY_MAX_LEN)]
            applied.append(a)
            i += 1
        elif a == "--tensor-parallel-size" and nxt not in (None, "1"):
            out += [a, "1"]
            applied.append(a)
            i += 1
        elif a == "--quantization":
            applied.append(a)
            i += 1
        elif a == "--speculative-config" and nxt is not None:
            cfg = json.loads(nxt)
            if str(cfg.get("model", "")).startswith(MOUNT_ROOT + "/"):
                cfg["model"] = str(head)
                applied.append(f"{MOUNT_ROOT}/<channel>")
            if int(cfg.get("max_model_len") or 0) > TINY_MAX_LEN:
                cfg["max_model_len"] = TINY_MAX_LEN
                applied.append("speculative max_model_len")
            if cfg.get("draft_tensor_parallel_size") not in (None, 1):
                cfg["draft_tensor_parallel_size"] = 1
                applied.append("speculative draft_tensor_parallel_size")
            out += [a, json.dumps(cfg, separators=(",", ":"))]
            i += 1
        else:
            out.append(a)
        i += 1
    assert set(applied) <= set(CPU_OVERRIDES), applied
    assert env.get(SPEC_ENV) is None or "--speculative-config" in out
    return out, applied


def _c(**kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "model": "$HEAD",
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    d.update(kw)
    return {k: v for k, v in d.items() if v is not ...}


# id -> (speculative config (dict, or raw text), what peagle's refusal names (regex),
#        what vLLM's refusal names (regex), when vLLM refuses ("config" = its parser or
#        create_engine_config; "startup" = only when the engine starts), the spec fields
#        that make `plan` refuse it too (None: plan cannot express it), note)
BAD: dict[str, tuple[Any, str, str, str, dict[str, Any] | None, str]] = {
    "unknown-key": (_c(foo_bar=1), "foo_bar", "foo_bar", "config", None, ""),
    "missing-method": (
        _c(method=...),
        '"method"',
        r"EagleLlamaForCausalLMEagle3",
        "config",
        None,
        "vLLM guesses method 'eagle' from the path and refuses the head as Eagle<arch>",
    ),
    "k-0": (
        _c(num_speculative_tokens=0),
        "num_speculative_tokens",
        "num_speculative_tokens",
        "config",
        {"num_speculative_tokens": 0},
        "",
    ),
    "k-negative": (
        _c(num_speculative_tokens=-1),
        "num_speculative_tokens",
        "num_speculative_tokens",
        "config",
        {"num_speculative_tokens": -1},
        "",
    ),
    "k-fraction": (
        _c(num_speculative_tokens=2.5),
        "num_speculative_tokens",
        "num_speculative_tokens",
        "config",
        None,
        "",
    ),
    "k-129": (
        _c(num_speculative_tokens=129),
        "num_speculative_tokens",
        r"max_spec_len <= MAX_SPEC_LEN|MAX_SPEC_LEN",
        "startup",
        {"num_speculative_tokens": 129},
        "config accepts it; the rejection sampler asserts K <= 128 on the first step",
    ),
    "draft-tp-2-of-1": (
        _c(draft_tensor_parallel_size=2),
        "draft_tensor_parallel_size",
        "draft_tensor_parallel_size",
        "config",
        {"draft_tensor_parallel_size": 2},
        "",
    ),
    "padded-batch-off": (
        _c(disable_padded_drafter_batch=True),
        "disable_padded_drafter_batch",
        "disable_padded_drafter_batch",
        "startup",
        {"disable_padded_drafter_batch": True},
        "config accepts it; the proposer raises NotImplementedError at start-up",
    ),
    "bad-json": (
        '{"model": "$HEAD", "method": "eagle3",',
        f"{SPEC_ENV} is not valid JSON",
        r"--speculative-config",
        "config",
        None,
        "SM_VLLM_SPECULATIVE_CONFIG is --speculative-config",
    ),
    "not-an-object": ("[1, 2]", "not a JSON object", r"'list' object", "config", None, ""),
    "unknown-method": (
        _c(method="eagle4"),
        "'eagle4'",
        r"method[\s\S]*eagle4",
        "config",
        None,
        "",
    ),
    "parallel-not-bool": (
        _c(parallel_drafting="maybe"),
        "parallel_drafting",
        "parallel_drafting",
        "config",
        None,
        "",
    ),
    "token-tree-on-0.21+": (
        _c(speculative_token_tree="[(0,)]"),
        "speculative_token_tree",
        "speculative_token_tree",
        "config",
        None,
        "key removed after 0.20.x",
    ),
    "disable-by-batch-size-on-0.17+": (
        _c(disable_by_batch_size=4),
        "disable_by_batch_size",
        "disable_by_batch_size",
        "config",
        {"disable_by_batch_size": 4},
        "key exists only in 0.16.0",
    ),
    "tp-inside-spec": (
        _c(tensor_parallel_size=1),
        "tensor_parallel_size",
        "tensor_parallel_size",
        "config",
        None,
        "",
    ),
    "missing-drafter-dir": (
        _c(model=f"{MOUNT_ROOT}/missing-channel"),
        "does not exist",
        "missing-channel",
        "config",
        None,
        "",
    ),
}


def bad_raw(config: Any, head: Path) -> str:
    text = config if isinstance(config, str) else json.dumps(config)
    return text.replace("$HEAD", str(head))
