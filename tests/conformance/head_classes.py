"""Issue 25's head classes: what the real engine does with each, and peagle's verdict on it
(main venv; the heads are built by `head_classes_build` in the engine venv).

`CLASSES` says, per head, which behaviour of vLLM the head is meant to show. The test
measures the engine's behaviour and checks the table against it, then peagle against
the engine; peagle's own output never sets an expectation. The `both` regexes must be
found in peagle's failing check AND in the engine's error (the property both name);
`peagle` ones only in peagle's message (what it adds: the config key, the fix).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sm_peagle.checks import Check
from sm_peagle.drafter import inspect_local
from sm_peagle.drafter.check import check_drafter, check_drafter_loading
from sm_peagle.vllm.versions import VllmVersion
from tests.conformance.engine_proc import run_engine_module

REPO = Path(__file__).resolve().parents[2]
# What vLLM does with a head (the words peagle's messages use for it, too).
REFUSES, FIRST_REQUEST, SILENT, SERVES = "refuses at start", "first request", "silent", "serves"
PHRASE = {
    REFUSES: "refuses it at start",
    FIRST_REQUEST: "starts and passes the health check, then fails every request",
    SILENT: "loads it silently wrong",
}


@dataclass(frozen=True)
class Case:
    behaviour: str
    both: tuple[str, ...] = ()  # regexes in peagle's failing message and the engine's error
    peagle: tuple[str, ...] = ()  # regexes in peagle's message only
    check: str = ""  # the check that must carry peagle's finding


CLASSES: dict[str, Case] = {
    # tensor names vLLM's loader cannot map
    "names-model-prefix": Case(
        REFUSES,
        (r"no module or parameter named", r"draft_id_to_target_id"),
        (r"'model\.' prefix",),
        "drafter.tensor_names",
    ),
    "names-extra-q-norm": Case(
        REFUSES, (r"no module or parameter named", r"q_norm"), (), "drafter.tensor_names"
    ),
    # config keys the model class needs
    "config-no-kv-heads": Case(
        REFUSES, (r"\b256\b", r"\b128\b"), (r"num_key_value_heads",), "drafter.tensor_shapes"
    ),
    "config-no-model-type": Case(REFUSES, (r"model_type",), (), "drafter.config_keys"),
    # unknown dtypes
    "dtype-fp33": Case(REFUSES, (r"FP33",), (), "drafter.dtypes"),
    "config-dtype-float33": Case(REFUSES, (r"float33",), (), "drafter.dtypes"),
    # first-request failures (each also gets a `vllm serve` of its own: test_first_request)
    "mask-token-at-vocab-size": Case(
        FIRST_REQUEST, (r"out of range",), (r"ptd_token_id = 512",), "drafter.token_ids"
    ),
    "aux-layer-past-target": Case(
        FIRST_REQUEST, (r"\b512\b", r"\b768\b"), (r"ids \[5\]",), "drafter.aux_layers"
    ),
    # loaded silently wrong: the engine serves; loaded poisoned (test_heads.POISONED),
    # acceptance collapses against `relay`
    "layers-2-weights-1": Case(
        SILENT, (), (r"num_hidden_layers 2", r"layer\(s\) 1"), "drafter.unloaded"
    ),
    "tied-no-lm-head": Case(SILENT, (), (r"tie_word_embeddings", r"lm_head"), "drafter.borrowed"),
    "head-dim-32": Case(SILENT, (), (r"head_dim 32", r'"head_dim": 64'), "drafter.tensor_shapes"),
    "no-embed-tokens": Case(SILENT, (), (r"embed_tokens",), "drafter.borrowed"),
    # controls: the relay head itself, and peagle's synthetic head
    "relay": Case(SERVES),
    "synthetic": Case(SERVES),
}
# Served by vLLM, refused by peagle as a policy: unpickling runs code from the file.
PICKLED = "pickled-bin"
ALL_HEADS = (*CLASSES, PICKLED)
FIRST_REQUEST_HEADS = tuple(n for n, c in CLASSES.items() if c.behaviour == FIRST_REQUEST)
TARGET = {"target_hidden_size": 256, "target_vocab_size": 512, "target_num_layers": 4}


def build(engine: Any, out: Path) -> dict[str, Path]:
    """Every head of `ALL_HEADS` under `out` (the engine venv builds; peagle's synthetic
    head is written here, for the tiny target, as its generator writes it)."""
    from peagle_sandbox.synthetic_head import synthetic_head

    mask = json.loads((engine.models / "manifest.json").read_text())["mask_token_id"]
    built = run_engine_module(
        engine,
        "tests.conformance.head_classes_build",
        {"out": str(out), "mask_token_id": mask},
        extra_env={"PYTHONPATH": str(REPO)},
        stderr_path=out / "build.stderr",
        timeout=300,
    )
    heads = {name: Path(p) for name, p in built["heads"].items()}
    synthetic = out / "synthetic"
    synthetic.mkdir()
    files = synthetic_head(
        target_hidden=256,
        target_vocab=512,
        mask_token_id=mask,
        vllm_version=engine.version,
        aux_layer_ids=[1, 2, 3],
    )
    for rel, data in files.items():
        (synthetic / rel).write_bytes(data)
    heads["synthetic"] = synthetic
    missing = set(ALL_HEADS) - set(heads)
    assert not missing, f"head builder did not write {missing}"
    return heads


def peagle_checks(path: Path, version: str, *, strict: bool = False) -> list[Check]:
    """What `peagle drafter check PATH --vllm-version V --mode p-eagle -k 3
    --target-hidden-size 256 --target-vocab-size 512 --target-layers 4` judges."""
    from sm_peagle.planning.steps.drafter_checks import strict_checks

    ins = inspect_local(str(path))
    v = VllmVersion(version)
    checks = check_drafter(
        ins,
        target_hidden_size=TARGET["target_hidden_size"],
        target_vocab_size=TARGET["target_vocab_size"],
        vllm_version=v,
        mode="p-eagle",
        k=3,
    ) + check_drafter_loading(ins, vllm_version=v, mode="p-eagle", **TARGET)
    return strict_checks(checks) if strict else checks


def engine_text(r: dict[str, Any]) -> str:
    """The engine's error for a run: its exception, error lines and log tail."""
    log = Path(r["log"])
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-80:]) if log.exists() else ""
    return f"{r['error']}\n{r.get('log_errors', '')}\n{tail}"


def engine_behaviour(r: dict[str, Any], max_tokens: int) -> str:
    """refuses at start / first request / serves, from an `offline_runs` result: a
    failure inside `LLM.generate` (the traceback in its log) came after the engine
    started, at its first request."""
    if r["ok"] and all(len(x) == max_tokens for x in r["token_ids"]):
        return SERVES
    log = Path(r["log"])
    text = log.read_text(errors="replace") if log.exists() else ""
    return FIRST_REQUEST if "in generate" in text else REFUSES


def acceptance(r: dict[str, Any]) -> float:
    spec = r["spec"] or {}
    drafted = spec.get("num_draft_tokens") or 0
    return spec.get("num_accepted_tokens", 0) / drafted if drafted else 0.0
