"""Step 3 of `plan()`: the container's environment. JumpStart's and the catalog's
variables first (from the sources), then SM_VLLM_TENSOR_PARALLEL_SIZE, the engine args as
SM_VLLM_* variables, the speculative config, per-request acceptance, and the user's own
`container.env` last (its nulls remove defaults).
Also how numbers in engine args / env are read, as the container will read them.

Per-request acceptance: on an image whose vLLM has `--per-request-spec-decode-metrics`
(`vllm.versions.per_request_metrics_min()`, from vLLM's source facts), a speculative mode
gets `SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary`, which the DLC's `SM_VLLM_<NAME>` ->
`--<name>` rule (container/entrypoint.py) turns into `--per-request-spec-decode-metrics
summary`: vLLM then puts the request's own acceptance in its response
(`metrics.speculative_decoding`), which `invoke`, `race`, `tune-k` and `bench` read instead
of the engine's 10-second log lines. `detailed` (adds the per-step arrays) is asked for as
any other engine arg, so the SDK's spec and the CLI's `-f` file say it the same way:
`container.engine_args: {per_request_spec_decode_metrics: detailed}` (or `none` to turn it
off; `container.env: {SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS: null}` removes it).
Baseline never gets it: vLLM refuses it without a speculative config (`config/vllm.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...catalog.images import OLD_RULES
from ...checks import Check, failed, passed, warned
from ...errors import Param, SpecError
from ...errors import text as words
from ...vllm.speculative import SPEC_ENV, to_env_value
from ...vllm.versions import VllmVersion, per_request_metrics_min, per_request_metrics_values
from ..spec.model import DeploymentSpec, Mode

if TYPE_CHECKING:  # annotations only
    from .sources import Sources

__all__ = [
    "MODEL_LOCATION",
    "PER_REQUEST_ENV",
    "PER_REQUEST_LEVELS",
    "build_environment",
    "check_per_request_metrics",
    "check_environment",
    "env_number",
    "remove_defaults",
    "whole_number",
]

MODEL_DIR = "/opt/ml/model"  # where SageMaker mounts the ModelDataSource
# Where the container finds the model: a spec's null may not remove them.
MODEL_LOCATION = ("HF_MODEL_ID", "SM_VLLM_MODEL")
ENV_MAX_ENTRIES = 100
ENV_MAX_BYTES = 1024
ENV_MAX_TOTAL = 32 * 1024
# `--per-request-spec-decode-metrics` as the DLC's SM_VLLM_* rule spells it, and the values
# vLLM's `ObservabilityConfig.per_request_spec_decode_metrics` accepts.
PER_REQUEST_ENV = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"
PER_REQUEST_LEVELS = ("none", "summary", "detailed")
PER_REQUEST_DEFAULT = "summary"


def build_environment(
    spec: DeploymentSpec, src: Sources, config: dict[str, Any] | None, checks: list[Check]
) -> dict[str, str]:
    """The container environment, in the order SageMaker will show it; appends checks."""
    env = src.env
    env["SM_VLLM_TENSOR_PARALLEL_SIZE"] = str(src.tp)
    for key, value in src.engine_args.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        env["SM_VLLM_" + key.upper().replace("-", "_")] = text
    if config is not None:
        env[SPEC_ENV] = to_env_value(config)
        if _has_per_request_metrics(src.version):
            # setdefault: an engine arg (`detailed`, `none`) already set it above.
            env.setdefault(PER_REQUEST_ENV, PER_REQUEST_DEFAULT)
    else:
        env.pop(SPEC_ENV, None)
    if spec.container.env.get(SPEC_ENV) is not None:
        checks.append(
            failed(
                f"container.env.{SPEC_ENV}",
                "set by peagle from `speculative:`",
                "remove it from container.env",
            )
        )
    env.update({k: v for k, v in spec.container.env.items() if k != SPEC_ENV and v is not None})
    remove_defaults(spec, env, checks)
    adapt_to_old_entrypoint(env, src, checks)
    checks += check_per_request_metrics(
        env, config is not None, src.version, where=_per_request_field(spec)
    )
    checks += check_environment(env)
    return env


def _per_request_field(spec: DeploymentSpec) -> str:
    """Where the user set per-request acceptance (for the check's name), else peagle's own
    default."""
    if PER_REQUEST_ENV in spec.container.env:
        return f"container.env.{PER_REQUEST_ENV}"
    for arg in spec.container.engine_args:
        if "SM_VLLM_" + arg.upper().replace("-", "_") == PER_REQUEST_ENV:
            return f"container.engine_args.{arg}"
    return "container.per_request_metrics"


def _per_request_min() -> VllmVersion | None:
    found = per_request_metrics_min()
    return None if found is None else VllmVersion(str(found))


def _has_per_request_metrics(version: VllmVersion) -> bool:
    first = _per_request_min()
    return first is not None and version >= first


def check_per_request_metrics(
    env: dict[str, str],
    speculative: bool,
    version: VllmVersion,
    *,
    where: str = "container.per_request_metrics",
) -> list[Check]:
    """The per-request acceptance setting as vLLM will judge it at start-up, so a value it
    refuses fails the plan instead of the endpoint (after the download and the start-up
    wait): a level it does not know, the flag without a speculative config, or the flag on
    a vLLM that predates it. Nothing when the variable is not set."""
    if PER_REQUEST_ENV not in env:
        return []
    value = env[PER_REQUEST_ENV]
    word = value.strip().lower()
    if word == "false":  # the DLC rule drops the flag: as if unset
        return []
    first = _per_request_min()
    if first is None or version < first:
        need = f"vLLM >= {first}" if first is not None else "a vLLM that has it"
        return [
            failed(
                where,
                f"vLLM {version} has no --per-request-spec-decode-metrics ({need}); it "
                f"would refuse {PER_REQUEST_ENV} at start-up",
                f"remove per_request_spec_decode_metrics, or use an image with {need}",
            )
        ]
    levels = per_request_metrics_values(version) or PER_REQUEST_LEVELS
    if word not in levels:
        return [
            failed(
                where,
                f"{PER_REQUEST_ENV}={value!r}: vLLM {version}'s "
                f"--per-request-spec-decode-metrics takes {', '.join(levels)}",
                "set container.engine_args.per_request_spec_decode_metrics to summary or "
                "detailed (or none)",
            )
        ]
    if word == "none":
        return [passed(where, "none: acceptance comes from the engine's log lines")]
    if not speculative:
        return [
            failed(
                where,
                f"{PER_REQUEST_ENV}={value}: vLLM refuses per-request acceptance without a "
                "speculative config (baseline)",
                words(
                    "remove per_request_spec_decode_metrics for baseline, or use {m} or eagle3",
                    m=Param("mode", "p-eagle"),
                ),
            )
        ]
    return [
        passed(
            where,
            f"{word}: vLLM reports each request's acceptance in its response "
            f"(--per-request-spec-decode-metrics {word})",
        )
    ]


def remove_defaults(spec: DeploymentSpec, env: dict[str, str], checks: list[Check]) -> None:
    """`container.env: {KEY: null}` removes a variable peagle would set by default (what
    JumpStart, the catalog or peagle's defaults put there), so a spec can describe an
    endpoint made by hand that lacks it (`peagle adopt`). A null cannot remove what the
    endpoint needs to serve what the spec asks for, nor contradict another field:
    SpecError with the fix. A null of a variable nothing sets removes nothing (a warning:
    a typo in the name, or a default that changed with the instance or the image)."""
    from_args = {
        "SM_VLLM_" + arg.upper().replace("-", "_"): arg for arg in spec.container.engine_args
    }
    for key in sorted(k for k, v in spec.container.env.items() if v is None):
        where = f"container.env.{key}"
        if key == SPEC_ENV and spec.speculative.mode != Mode.BASELINE:
            raise SpecError(
                f"{where}: null would remove the speculative config that mode "
                f"{spec.speculative.mode} runs on",
                remedy=f"drop `{key}: null` (peagle sets it from `speculative:`), or set "
                "speculative.mode: baseline for no speculation",
                field=where,
                value=None,
            )
        if key in MODEL_LOCATION:
            raise SpecError(
                f"{where}: null would remove where the container finds the model",
                remedy=f"drop `{key}: null`; say where the weights are with model_data",
                field=where,
                value=None,
            )
        if key in from_args:
            raise SpecError(
                f"{where}: null removes what container.engine_args.{from_args[key]} sets",
                remedy=f"drop one of the two: `{key}: null` or engine_args.{from_args[key]}",
                field=where,
                value=None,
            )
        if key in env:
            del env[key]
            checks.append(passed(where, "removed: null in the spec (peagle sets it by default)"))
        else:
            checks.append(
                warned(where, f"null removes nothing: no {key} is set here", "drop the null")
            )


def adapt_to_old_entrypoint(env: dict[str, str], src: Sources, checks: list[Check]) -> None:
    """DLC builds before 2026-03-17 (classic 0.13.0-0.17.1, facts 3) have no true/false
    handling (an empty value is a bare flag, any other value one argument) and no
    /opt/ml/model -> HF_MODEL_ID ladder (the model comes only from SM_VLLM_MODEL). So:
    `true` becomes "", `false` drops the variable, and the model is set explicitly."""
    if src.entrypoint_rules != OLD_RULES:
        return
    changed = []
    for key in [k for k in env if k.startswith("SM_VLLM_")]:
        word = env[key].strip().lower()
        if word == "true":
            env[key] = ""
            changed.append(f"{key}=true -> ''")
        elif word == "false":
            del env[key]
            changed.append(f"{key}=false dropped")
    if not env.get("SM_VLLM_MODEL"):
        if src.model_data is not None:
            env["SM_VLLM_MODEL"] = MODEL_DIR
        elif env.get("HF_MODEL_ID"):
            env["SM_VLLM_MODEL"] = env["HF_MODEL_ID"]
        if env.get("SM_VLLM_MODEL"):
            changed.append(f"SM_VLLM_MODEL={env['SM_VLLM_MODEL']}")
    checks.append(
        passed(
            "container.entrypoint",
            "image entrypoint predates 2026-03-17 (no true/false, no model ladder): "
            + ("; ".join(changed) if changed else "nothing to adapt"),
        )
    )


def whole_number(value: Any, field_: str) -> int:
    """An engine arg that must be an integer: 8 or "8", never 2.5, true or "abc"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    raise SpecError(f"{field_}: {value!r} is not a whole number", field=field_, value=value)


def env_number(spec: DeploymentSpec, env: dict[str, str], key: str, kind: type) -> Any:
    """A numeric SM_VLLM_* setting as the container will read it: an int >= 1, or a float
    in (0, 1]. Bad values raise SpecError naming where the user set them."""
    field_ = f"container.env.{key}"
    if key not in spec.container.env:
        for arg in spec.container.engine_args:
            if "SM_VLLM_" + arg.upper().replace("-", "_") == key:
                field_ = f"container.engine_args.{arg}"
    try:
        value = kind(env[key].strip())
    except ValueError:
        value = None
    if kind is int and (value is None or value < 1):
        raise SpecError(
            f"{field_}: {env[key]!r} is not a positive whole number", field=field_, value=env[key]
        )
    if kind is float and (value is None or not 0 < value <= 1):
        raise SpecError(
            f"{field_}: {env[key]!r} is not a fraction between 0 and 1",
            field=field_,
            value=env[key],
        )
    return value


def check_environment(env: dict[str, str]) -> list[Check]:
    out: list[Check] = []
    for key, value in env.items():
        for what, text in (("name", key), ("value", value)):
            n = len(text.encode())
            if n > ENV_MAX_BYTES:
                out.append(
                    failed(
                        f"container.env.{key}",
                        f"environment {what} of {key} is {n} bytes; SageMaker allows at most "
                        f"{ENV_MAX_BYTES}",
                        "shorten it",
                    )
                )
    if len(env) > ENV_MAX_ENTRIES:
        out.append(
            failed(
                "container.env",
                f"{len(env)} environment variables; max is {ENV_MAX_ENTRIES}",
                "remove some",
            )
        )
    total = sum(len(k.encode()) + len(v.encode()) for k, v in env.items())
    if total > ENV_MAX_TOTAL:
        out.append(
            failed(
                "container.env",
                f"environment is {total} bytes; max is {ENV_MAX_TOTAL}",
                "shorten it",
            )
        )
    return out or [passed("container.env", f"{len(env)} variables, {total} bytes")]
