"""How the sandbox runs a SageMaker model on the real vLLM CPU engine: the `/opt/ml` root,
the container environment, the command, and the ONE table of what it changes.

The sandbox starts **peagle's own container entrypoint** (`sm_peagle.container.entrypoint`,
which emulates the DLC's; it does not run the DLC's script) with the model's
`Environment`, so `SM_VLLM_*` -> `vllm serve` argv is the code a user deploys. Everything
the sandbox adds or overrides for a CPU and a tiny model is in `SANDBOX_FLAGS`, written
into the endpoint's log at start-up; every other flag passes through unchanged.

`/opt/ml` mapping: each endpoint incarnation gets a root directory standing for `/opt/ml`
(`<root>/model`, `<root>/additional-model-data-sources/<channel>`). The entrypoint finds
`<root>/model` through `PEAGLE_OPT_ML_ROOT` (sandbox only); in every environment value
the prefix `/opt/ml/` (and a bare `/opt/ml`) is rewritten to the root, which covers the
drafter path inside `SM_VLLM_SPECULATIVE_CONFIG`, `HF_MODEL_ID` and
`TIKTOKEN_ENCODINGS_BASE`. Each rewrite is logged.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sm_peagle.contract import CONTAINER_ENTRYPOINT

__all__ = [
    "OPT_ML",
    "SANDBOX_FLAGS",
    "FlagRule",
    "container_environ",
    "entrypoint_command",
    "flag_table_lines",
    "map_opt_ml",
    "write_vllm_shim",
]

OPT_ML = "/opt/ml"
# `/opt/ml` as a whole path component: `/opt/ml`, `/opt/ml/...`, inside JSON strings too.
_OPT_ML = re.compile(r"(?<![\w.-])/opt/ml(?=/|\"|'|\s|$)")


@dataclass(frozen=True)
class FlagRule:
    """One change the sandbox makes. `how`: `argv` (appended after the entrypoint's
    command: vLLM's argparse keeps the last value), `env` (set in the container env),
    `drop` (the SM_VLLM_ variable is removed, so the flag is not passed), `kept` (listed
    for clarity: the engine judges the user's value)."""

    name: str
    how: str
    value: str
    reason: str


SANDBOX_FLAGS: tuple[FlagRule, ...] = (
    FlagRule(
        "--port",
        "argv",
        "<free port>",
        "many endpoints share one host; SageMaker gives each container its own 8080",
    ),
    FlagRule(
        "--host",
        "argv",
        "127.0.0.1",
        "the sandbox has no authentication: loopback only (the container binds 0.0.0.0)",
    ),
    FlagRule(
        "--enforce-eager",
        "argv",
        "(bare flag)",
        "torch.compile/graph capture on 2 CPUs takes 60-75 s per start; eager takes 20-40 s",
    ),
    FlagRule(
        "--tensor-parallel-size",
        "argv",
        "1",
        "one CPU process; the plan's value is the GPU count of the ml.* instance type",
    ),
    FlagRule(
        "SM_VLLM_QUANTIZATION",
        "drop",
        "(removed)",
        "the tiny model is bf16 and GPU quantization kernels (fp8, mxfp4) do not exist on CPU",
    ),
    FlagRule(
        "VLLM_CPU_KVCACHE_SPACE",
        "env",
        "1",
        "GiB of KV cache (vLLM's CPU default is larger); 1 GiB holds ~500k tiny-model tokens",
    ),
    FlagRule(
        "VLLM_CPU_OMP_THREADS_BIND",
        "env",
        "nobind",
        "several engines and the sandbox share a small machine; auto-binding would pin "
        "every engine to the same cores",
    ),
    FlagRule(
        "HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE",
        "env",
        "1",
        "models come from the sandbox's S3 only, as under network isolation",
    ),
    FlagRule(
        "VLLM_CACHE_ROOT",
        "env",
        "<engine home>/cache",
        "keeps vLLM's caches out of the user's home directory",
    ),
    FlagRule(
        "--max-model-len",
        "kept",
        "(the model's value)",
        "not overridden: the engine must judge it against the model's context length",
    ),
)


def map_opt_ml(env: Mapping[str, str], root: Path) -> tuple[dict[str, str], list[str]]:
    """(env with `/opt/ml` replaced by `root` in every value, one note per rewrite)."""
    out, notes = {}, []
    for key, value in env.items():
        new = _OPT_ML.sub(lambda _m: str(root), value)
        if new != value:
            notes.append(f"{key}: {OPT_ML} -> {root}")
        out[key] = new
    return out, notes


def flag_table_lines() -> list[str]:
    """The table as log lines (one per row), for the endpoint's start-up log."""
    head = "peagle-sandbox: flags the sandbox adds or overrides (all others pass through):"
    return [head] + [f"  {r.name} [{r.how}] {r.value}: {r.reason}" for r in SANDBOX_FLAGS]


def _appended_argv(port: int) -> list[str]:
    values = {"--port": str(port)}
    out: list[str] = []
    for rule in SANDBOX_FLAGS:
        if rule.how != "argv":
            continue
        out.append(rule.name)
        if rule.value != "(bare flag)":
            out.append(values.get(rule.name, rule.value))
    return out


def entrypoint_command(python: Path, port: int) -> list[str]:
    """`<engine python> -m sm_peagle.container.entrypoint serve <sandbox flags>`: SageMaker
    starts a hosting container as `<image> serve`; the entrypoint appends extra argv after
    the command it builds, so these flags win."""
    return [str(python), "-m", CONTAINER_ENTRYPOINT, "serve", *_appended_argv(port)]


def container_environ(
    model_env: Mapping[str, str],
    root: Path,
    *,
    engine_home: Path,
    shim_dir: Path,
    base: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """(the container's environment, notes to log). The host's own environment minus
    anything AWS (a container gets its role, never the sandbox's keys), then the model's
    Environment with `/opt/ml` mapped, then the table's `env`/`drop` rows."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith(("AWS_", "SM_VLLM_"))}
    mapped, notes = map_opt_ml(model_env, root)
    env.update(mapped)
    for rule in SANDBOX_FLAGS:
        if rule.how == "drop" and env.pop(rule.name, None) is not None:
            notes.append(f"{rule.name} removed ({rule.reason})")
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_CPU_OMP_THREADS_BIND": "nobind",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_CACHE_ROOT": str(engine_home / "cache"),
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PEAGLE_OPT_ML_ROOT": str(root),  # the entrypoint's model ladder: <root>/model
            "PATH": os.pathsep.join([str(shim_dir), env.get("PATH", os.defpath)]),
            "PYTHONUNBUFFERED": "1",  # log lines reach CloudWatch as they are written
        }
    )
    return env, notes


def write_vllm_shim(directory: Path, python: Path) -> Path:
    """A `vllm` command (first on PATH) that runs vLLM's CLI through peagle's launcher:
    vllm-cpu's own console script fails (its distribution is not named `vllm`)."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "vllm"
    shim.write_text(f'#!/bin/sh\nexec "{python}" -m peagle_sandbox.vllm_engine.launcher "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return shim
