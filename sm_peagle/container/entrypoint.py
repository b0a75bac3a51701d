"""Container entrypoint: `SM_VLLM_*` environment -> `vllm serve` argv, checked first.

Argument semantics are those of the current AWS vLLM DLC (v2.4: the rules of
2026-08-19, commit dceae13291, `scripts/docker/vllm/sagemaker_args.py` in
aws/deep-learning-containers; facts 3), so a spec deploys the same on this image as on
the DLC: `SM_VLLM_<NAME>` -> `--<name>`; `true` (or empty) is a bare flag, `false` drops
it; a JSON array gives one argument per element (`null` -> "", objects and lists inside
-> compact JSON, booleans -> true/false, other scalars str()), `[]` drops the flag; a
single JSON object stays one argument (SM_VLLM_SPECULATIVE_CONFIG arrives intact);
several objects separated by spaces (`{..} {..}`) become one argument each;
`--allowed-origins`, `--allowed-methods`, `--allowed-headers` and `--middleware` keep
their value as ONE argument, arrays included; anything else that is not JSON passes
through as one argument. The model comes from SM_VLLM_MODEL, else a non-empty
/opt/ml/model, else HF_MODEL_ID. One deliberate difference: the model is passed
positionally, since `vllm serve --model` is deprecated in favour of `vllm serve <model>`.
Images older than 2026-03-17 behave differently; `plan` adapts the environment for
them (`planning/environment.py`), this entrypoint does not emulate them.

Why check before exec: vLLM parses SM_VLLM_SPECULATIVE_CONFIG into a dataclass that
forbids unknown keys, and a bad drafter head fails while loading, both *after* SageMaker
has spent the download and up to an hour of health-check timeout. Here a bad config or
head ends the container in seconds with one `peagle-entrypoint: FATAL ...` line that
names the fix, which is what CloudWatch and `peagle logs` then show. The same holds for
SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS (`--per-request-spec-decode-metrics`, vLLM >=
the version in the source facts): vLLM refuses it without a speculative config, a level
other than none/summary/detailed, and a version that predates it, only at start-up.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from . import settings
from .lax import lax_bool, lax_int

__all__ = [
    "Fatal",
    "build_argv",
    "installed_vllm",
    "main",
    "validate_per_request_metrics",
    "validate_speculative_config",
]

PREFIX = "SM_VLLM_"
PORT = "8080"  # SageMaker sends /ping and /invocations to 8080 only
MODEL_DIR = "/opt/ml/model"
SPEC_ENV = "SM_VLLM_SPECULATIVE_CONFIG"
PER_REQUEST_ENV = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"
PER_REQUEST_LEVELS = ("none", "summary", "detailed")  # vLLM's ObservabilityConfig literal
# Sandbox only (sm_peagle/sandbox/engine_host.py): a directory standing for /opt/ml, so
# the model ladder finds <root>/model on a machine without /opt/ml. Never set on AWS.
OPT_ML_ROOT_ENV = "PEAGLE_OPT_ML_ROOT"
LOG = "peagle-entrypoint:"
# Consumed by the entrypoint itself rather than turned into flags.
_RESERVED = frozenset({"SM_VLLM_MODEL", "SM_VLLM_PORT"})
# Flags whose value the DLC keeps as ONE argument, JSON arrays included: vLLM parses the
# first three with json.loads and appends --middleware (action="append").
KEEP_ONE = frozenset(
    {"--allowed-origins", "--allowed-methods", "--allowed-headers", "--middleware"}
)

VllmProbe = Callable[[Mapping[str, str]], tuple[set[str] | None, Any]]


class Fatal(Exception):
    """A setting that would make vLLM fail late; `what` and `fix` form the FATAL line."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix


def _flag_values(flag: str, raw: str) -> list[str] | None:
    """The arguments that follow `flag` for env value `raw`; None drops the flag. The
    AWS vLLM DLC's rules of 2026-08-19 (v2.4, `scripts/docker/vllm/sagemaker_args.py`)."""
    word = raw.strip().lower()
    if word in ("", "true"):  # empty or true: a bare flag (--enforce-eager)
        return []
    if word == "false":
        return None
    if flag in KEEP_ONE:  # vLLM json.loads these itself / appends: the value is one arg
        return [raw]
    try:
        value = json.loads(raw)
    except ValueError:
        objects = _json_objects(raw)
        return objects if objects else [raw]  # not JSON: one argument, vLLM reports it
    if isinstance(value, list):  # one argument per element; [] drops the flag
        return [_element(x) for x in value] or None
    return [raw]  # a single object, a number, a string: one argument, byte for byte


def _element(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (dict, list)):
        return json.dumps(x, separators=(",", ":"))
    return x if isinstance(x, str) else str(x)


def _json_objects(raw: str) -> list[str] | None:
    """`{..} {..}` (e.g. --lora-modules): one argument per object, else None."""
    decoder, pos, out = json.JSONDecoder(), 0, []
    text = raw.strip()
    while pos < len(text):
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        out.append(text[pos:end])
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out if len(out) > 1 else None


def build_argv(
    env: Mapping[str, str],
    *,
    model_dir_nonempty: Callable[[], bool],
    model_dir: str = MODEL_DIR,
) -> list[str]:
    """`vllm serve <model> --port 8080 <flags sorted by env name>` for `env`."""
    model = env.get("SM_VLLM_MODEL", "").strip()
    if not model and model_dir_nonempty():
        model = model_dir
    if not model:
        model = env.get("HF_MODEL_ID", "").strip()
    if not model:
        raise Fatal(
            "no model to serve: SM_VLLM_MODEL unset, /opt/ml/model empty, HF_MODEL_ID unset",
            "give the model a ModelDataSource, or set SM_VLLM_MODEL or HF_MODEL_ID",
        )
    argv = ["vllm", "serve", model, "--port", PORT]
    for key in sorted(env):  # sorted: the same env always gives the same command line
        if not key.startswith(PREFIX) or key == PREFIX or key in _RESERVED:
            continue
        flag = "--" + key[len(PREFIX) :].lower().replace("_", "-")
        values = _flag_values(flag, env[key])
        if values is not None:
            argv += [flag, *values]
    return argv


def installed_vllm(env: Mapping[str, str]) -> tuple[set[str] | None, Any]:
    """(SpeculativeConfig init fields, vLLM version) of the vLLM in this image.

    Fields come from the installed dataclass itself, so the key check is exact for any
    version; without vLLM (tests, a broken image) the version comes from
    PEAGLE_VLLM_VERSION and the key check falls back to peagle's per-version table.
    """
    from ..vllm.versions import VllmVersion

    fields: set[str] | None = None
    text = env.get("PEAGLE_VLLM_VERSION")
    try:
        import vllm  # heavy (imports torch), but `vllm serve` is about to pay it anyway

        text = getattr(vllm, "__version__", None) or text
        from vllm.config import SpeculativeConfig

        fields = {f.name for f in dataclasses.fields(SpeculativeConfig) if f.init}
    except Exception:  # not installed, or moved: fall back to the table
        pass
    try:
        version = VllmVersion(text) if text else None
    except ValueError:
        version = None
    return fields, version


def validate_speculative_config(
    raw: str, vllm_fields: set[str] | None, *, version: Any = None, target_tp: int | None = None
) -> list[str]:
    """Raise Fatal for a config the installed vLLM would reject; return warnings.
    Values are read as vLLM's lax pydantic parsing reads them (`lax.py`)."""
    from ..vllm.versions import (
        MAX_K,
        PARALLEL_DRAFTING_MIN,
        speculative_keys,
        speculative_methods,
    )

    warnings: list[str] = []
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        raise Fatal(f"{SPEC_ENV} is not valid JSON ({e.msg})", "set it to a JSON object") from None
    if not isinstance(cfg, dict):
        raise Fatal(f"{SPEC_ENV} is not a JSON object", 'set it to {"method": "eagle3", ...}')
    method = cfg.get("method")
    if not method:
        raise Fatal(
            f'{SPEC_ENV} has no "method"',
            'add "method": "eagle3" (P-EAGLE and EAGLE-3 heads both use it)',
        )
    if version is not None and method not in speculative_methods(version):
        raise Fatal(
            f"{SPEC_ENV} method {method!r} unknown to vLLM {version}",
            'use "method": "eagle3" (P-EAGLE and EAGLE-3 heads both use it)',
        )
    parallel = _lax(cfg, "parallel_drafting", lax_bool, "a boolean", warnings) is True
    if parallel and version is not None and version < PARALLEL_DRAFTING_MIN:
        raise Fatal(
            f"parallel_drafting needs vLLM >= {PARALLEL_DRAFTING_MIN}; this image runs "
            f"vLLM {version}",
            "use an image with vLLM >= 0.16.0, or remove parallel_drafting (EAGLE-3)",
        )
    if parallel and version is None:
        warnings.append("vLLM version unknown: parallel_drafting support not verified")
    if parallel and _lax(cfg, "disable_padded_drafter_batch", lax_bool, "a boolean", warnings):
        raise Fatal(
            "disable_padded_drafter_batch is true, but parallel drafting needs padded batches",
            "remove disable_padded_drafter_batch (or set it false)",
        )
    if vllm_fields is not None:
        allowed, source = set(vllm_fields), "the installed vLLM's SpeculativeConfig"
    elif version is not None:
        allowed, source = set(speculative_keys(version)), f"vLLM {version}"
    else:
        allowed, source = None, ""
        warnings.append("vLLM version unknown: speculative config keys not checked")
    unknown = sorted(set(cfg) - allowed) if allowed is not None else []
    if unknown:
        raise Fatal(
            f"{SPEC_ENV} key(s) {', '.join(unknown)} unknown to {source}",
            "remove them; vLLM rejects unknown keys after loading the model",
        )
    raw_k = cfg.get("num_speculative_tokens")
    k = lax_int(raw_k)
    if raw_k is None:
        warnings.append("num_speculative_tokens not set: vLLM takes it from the head, if any")
    elif k is None or not 1 <= k <= MAX_K:
        raise Fatal(
            f"num_speculative_tokens={raw_k!r} is not a whole number in 1..{MAX_K}",
            f"set K between 1 and {MAX_K} (vLLM's rejection-sampler limit)",
        )
    elif type(raw_k) is not int:
        warnings.append(f"num_speculative_tokens={raw_k!r} is not a JSON integer; vLLM reads {k}")
    dtp = _lax(cfg, "draft_tensor_parallel_size", lax_int, "a whole number", warnings)
    if dtp is not None and target_tp is not None and dtp not in (1, target_tp):
        raise Fatal(
            f"draft_tensor_parallel_size={dtp} is neither 1 nor the target's "
            f"tensor_parallel_size {target_tp}",
            "set draft_tensor_parallel_size to 1 (or remove it)",
        )
    model = cfg.get("model")
    if isinstance(model, str) and model.startswith("/") and not Path(model).exists():
        raise Fatal(
            f"speculative model {model} does not exist in the container",
            "match the path to the AdditionalModelDataSources channel "
            "(/opt/ml/additional-model-data-sources/<channel>)",
        )
    if isinstance(model, str) and method == "eagle3" and Path(model).is_dir():
        mode = "p-eagle" if parallel else "eagle3"
        warnings += _check_head(model, mode, k, version)
    return warnings


def validate_per_request_metrics(env: Mapping[str, str], version: Any = None) -> None:
    """Raise Fatal where vLLM would refuse `--per-request-spec-decode-metrics` at start-up
    (`config/vllm.py`, `config/observability.py`): a vLLM older than the first version
    that has the flag, a value that version does not take (an empty or `true` value would
    be a bare flag, which argparse refuses), or a level other than `none` without
    SM_VLLM_SPECULATIVE_CONFIG ("requires speculative decoding to be enabled"). `false`
    drops the flag (DLC rule). Versions and values come from vLLM's source facts."""
    if PER_REQUEST_ENV not in env:
        return
    raw = env[PER_REQUEST_ENV]
    word = raw.strip().lower()
    if word == "false":
        return
    levels: tuple[str, ...] = PER_REQUEST_LEVELS
    if version is not None:
        from ..vllm.versions import per_request_metrics_min, per_request_metrics_values

        levels = per_request_metrics_values(version)
        if not levels:
            first = per_request_metrics_min()
            need = f"vLLM >= {first}" if first is not None else "a newer vLLM"
            raise Fatal(
                f"{PER_REQUEST_ENV} is set, but vLLM {version} has no "
                f"--per-request-spec-decode-metrics ({need})",
                f"remove {PER_REQUEST_ENV}, or use an image with {need}",
            )
    if word not in levels:
        raise Fatal(
            f"{PER_REQUEST_ENV}={raw!r} is not one of {', '.join(levels)}",
            f"set {PER_REQUEST_ENV} to summary or detailed (or remove it)",
        )
    if word != "none" and SPEC_ENV not in env:
        raise Fatal(
            f"{PER_REQUEST_ENV}={raw} needs speculative decoding; vLLM refuses it without "
            f"{SPEC_ENV}",
            f"remove {PER_REQUEST_ENV} (baseline), or set {SPEC_ENV}",
        )


def _lax(cfg: dict[str, Any], key: str, read: Callable[[Any], Any], kind: str, warn: list[str]):
    """`cfg[key]` as vLLM reads it (None if absent); Fatal if vLLM would refuse it."""
    if cfg.get(key) is None:
        return None
    value = read(cfg[key])
    if value is None:
        raise Fatal(f"{key}={cfg[key]!r} is not {kind}", f"set {key} to {kind} in JSON")
    if type(value) is not type(cfg[key]):
        warn.append(f"{key}={cfg[key]!r} is not a JSON {type(value).__name__}; vLLM reads {value}")
    return value


def _check_head(path: str, mode: str, k: int | None, version: Any) -> list[str]:
    """peagle's drafter checks (config, weights, architecture, mask token, shapes, K).
    The target model is unknown in here, so target-dependent rules only warn."""
    from ..drafter import check_drafter, inspect_drafter
    from ..errors import SpecError
    from ..vllm.versions import NEWEST_CHECKED

    try:
        inspection = inspect_drafter(path)
    except SpecError as e:
        raise Fatal(
            f"drafter {path}: {e.message}", e.remedy or "check the drafter channel"
        ) from None
    checks = check_drafter(inspection, vllm_version=version or NEWEST_CHECKED, mode=mode, k=k)
    for c in checks:
        if c.status == "fail":
            raise Fatal(
                f"drafter {path}: {c.name}: {c.message}",
                c.fix or "run `peagle drafter check` on the head",
            )
    return [f"drafter {c.name}: {c.message}" for c in checks if c.status == "warn"]


def _nonempty(path: str) -> bool:
    p = Path(path)
    return p.is_dir() and any(p.iterdir())


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    exec_fn: Callable[[str, list[str]], Any] | None = None,
    model_dir: str = MODEL_DIR,
    vllm_probe: VllmProbe | None = None,
    err: TextIO | None = None,
) -> int:
    """Check, log and exec `vllm serve`. Returns 2 (never execs) on a FATAL setting;
    tests inject `exec_fn` so nothing is exec'd."""
    env = settings.environ() if env is None else env
    out = err or sys.stderr
    extra = list(sys.argv[1:] if argv is None else argv)
    if extra[:1] == ["serve"]:  # SageMaker starts hosting containers as `<image> serve`
        extra = extra[1:]
    try:
        port = env.get("SM_VLLM_PORT", PORT).strip()
        if port != PORT:
            raise Fatal(
                f"SM_VLLM_PORT={port}, but SageMaker only sends traffic to port {PORT}",
                "remove SM_VLLM_PORT",
            )
        if env.get(OPT_ML_ROOT_ENV) and model_dir == MODEL_DIR:
            model_dir = str(Path(env[OPT_ML_ROOT_ENV]) / "model")
        command = build_argv(
            env, model_dir_nonempty=lambda: _nonempty(model_dir), model_dir=model_dir
        )
        command += extra
        version = None
        if SPEC_ENV in env or PER_REQUEST_ENV in env:  # the probe imports vLLM: only if needed
            fields, version = (vllm_probe or installed_vllm)(env)
        if SPEC_ENV in env:
            tp = lax_int(env.get("SM_VLLM_TENSOR_PARALLEL_SIZE", "1"))  # vLLM's default: 1
            for warning in validate_speculative_config(
                env[SPEC_ENV], fields, version=version, target_tp=tp
            ):
                print(f"{LOG} warning: {warning}", file=out)
        validate_per_request_metrics(env, version)
    except Fatal as e:
        print(f"{LOG} FATAL {e.what} (fix: {e.fix})", file=out, flush=True)
        return 2
    print(f"{LOG} exec {shlex.join(command)}", file=out, flush=True)
    try:
        (exec_fn or os.execvp)("vllm", command)
    except OSError as e:  # no `vllm` on PATH: an image problem, still one clear line
        print(
            f"{LOG} FATAL cannot exec vllm: {e.strerror} (fix: build FROM a vLLM image)", file=out
        )
        return 2
    return 0  # reached only with an injected exec_fn


if __name__ == "__main__":
    sys.exit(main())
