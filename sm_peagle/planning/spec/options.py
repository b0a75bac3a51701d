"""Flat options (CLI flags, SDK keyword arguments) -> a `DeploymentSpec`.

`SpecOptions` names every option once, with its type; `SpecOptions.overrides()` says
which spec field each one sets; `build_spec` is the one function that overlays them on
a spec file or a base document. A reader (or a static tool) follows `-k` from the typer
parameter `k` to `SpecOptions(k=k)` to `"speculative.num_speculative_tokens": self.k`.

It is also the one table of the SDK's keyword arguments: `plan`, `deploy`, `apply` and
`update` (`sm_peagle.ops.deployment`, `sm_peagle.ops.changes`) write each option as a
real, typed keyword parameter (completion and type checking see them), and
tests/unit/test_spec_keywords.py holds those signatures to `SPEC_OPTION_NAMES` and each
option to the spec field it sets, so a new option cannot be forgotten in one of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import Call, SpecError, text
from ..components.specs import parse_component
from .loading import CLEARED, load_spec, merge_overrides, spec_from_data
from .model import DeploymentSpec
from .rollout_spec import RolloutSpec

__all__ = [
    "SPEC_OPTION_NAMES",
    "SpecOptions",
    "build_spec",
    "options_from",
    "parse_autoscale",
    "spec_from_options",
]


@dataclass(frozen=True, kw_only=True)
class SpecOptions:
    """The options `plan`, `deploy`, `update`, `export` and the SDK share: each is a keyword
    argument of `plan`, `deploy` and `apply` (and of `update`, but `name`/`components`) and
    a flag of the commands that take a spec. None (the default of each) = not given: the
    spec file's value, or the spec's default, stands.

    Attributes:
        instance_type: the instance type (`endpoint.instance_type`), e.g. "ml.g6e.2xlarge".
        instance_count: instances behind the endpoint (`endpoint.instance_count`).
        mode: "p-eagle", "eagle3" or "baseline" (`speculative.mode`).
        k: K, the speculative tokens per step (`speculative.num_speculative_tokens`).
        k_schedule: dynamic K per batch size, "1-4:7,5-32:5" (vLLM >= 0.24.0).
        drafter: the drafter head: s3://bucket/prefix/ or a local directory.
        bucket: the bucket a local drafter is pushed to (default sagemaker-REGION-ACCOUNT).
        fallback: capacity fallback instance types, in priority order.
        autoscale: the autoscaling range "MIN:MAX", e.g. "1:4".
        autoscale_min: the autoscaling minimum alone (`autoscale` sets both).
        autoscale_max: the autoscaling maximum alone.
        target_concurrency: scale to keep this many requests per instance.
        target_invocations: scale on invocations per instance per minute.
        model_data: the target's weights: s3://…/, s3://…/model.tar.gz or hf://org/name.
        image: the container image URI.
        vllm_version: the vLLM version the image runs.
        name: the endpoint name (default: derived from the model and mode).
        routing_strategy: "LEAST_OUTSTANDING_REQUESTS" or "RANDOM".
        role: the SageMaker execution role ARN (default: PEAGLE_ROLE_ARN).
        region: the AWS region; a client made with a region deploys there, and a
            different `region` is a SpecError naming both.
        hosting: "endpoint" or "inference-components".
        components: inference components, e.g. ["p-eagle:k=7", "baseline"].
        scale_to_zero: let the inference components scale to zero copies.
        copies: the copies of each inference component.
        accelerators_per_copy: accelerators (GPUs) each copy reserves.
        min_instances: the fewest instances of an inference-component endpoint.
        max_instances: the most instances of an inference-component endpoint.
        scale_in_strategy: "idle-release" or "consolidation" (ScaleInPolicy).
        scale_in_max_step: the most instances one scale-in removes.
        scale_in_cooldown_minutes: minutes between scale-ins.
        monitor: speculation health (`monitoring.enabled`): a metric, an alarm and a
            dashboard that AWS computes from the engine's own lines; False turns it off.
        rollout: how the next update moves traffic (`endpoint.rollout`): "all-at-once",
            "canary", "linear" or "rolling", with an optional step size after a colon
            ("canary:1", "linear:25%", "rolling:2"); rollback alarms watch each bake. A
            mapping or a `RolloutSpec` sets the whole section
            (`{"strategy": "canary", "rollback_on": ["speculation"]}`).
        bake: how long each rollout step bakes while the alarms watch ("10m", 600).
        ttl: delete the endpoint after this long ("4h") or at this UTC time
            ("2026-12-01T18:00Z"), by an EventBridge Scheduler schedule (`endpoint.ttl`).
        ttl_role: the role that schedule runs as (default: peagle's own).
    """

    instance_type: str | None = None
    instance_count: int | None = None
    mode: str | None = None
    k: int | None = None
    k_schedule: str | None = None  # "1-4:7,5-32:5": num_speculative_tokens_per_batch_size
    drafter: str | None = None
    bucket: str | None = None
    fallback: list[str] | None = None
    autoscale: str | None = None  # "MIN:MAX", sets autoscale_min and autoscale_max
    autoscale_min: int | None = None
    autoscale_max: int | None = None
    target_concurrency: float | None = None
    target_invocations: float | None = None
    model_data: str | None = None
    image: str | None = None
    vllm_version: str | None = None
    name: str | None = None
    # LEAST_OUTSTANDING_REQUESTS | RANDOM: how SageMaker spreads requests over instances
    routing_strategy: str | None = None
    role: str | None = None
    region: str | None = None
    # endpoint.hosting: inference-components (planning.component_specs)
    hosting: str | None = None
    components: list[str] | None = None  # "p-eagle:k=7", "baseline"
    scale_to_zero: bool | None = None
    copies: int | None = None
    accelerators_per_copy: int | None = None
    min_instances: int | None = None
    max_instances: int | None = None
    scale_in_strategy: str | None = None  # idle-release | consolidation (ScaleInPolicy)
    scale_in_max_step: int | None = None
    scale_in_cooldown_minutes: int | None = None
    monitor: bool | None = None
    # "canary:1": endpoint.rollout.strategy and .size; a mapping or RolloutSpec: all of it
    rollout: str | Mapping[str, Any] | RolloutSpec | None = None
    bake: str | float | None = None  # endpoint.rollout.bake
    ttl: str | float | None = None  # endpoint.ttl: "4h", "2026-12-01T18:00Z"
    ttl_role: str | None = None  # endpoint.ttl_role

    @classmethod
    def from_keywords(cls, options: dict[str, Any]) -> SpecOptions:
        """The SDK's `**options` (k=7, mode="eagle3", ...); unknown names are a SpecError."""
        parse_autoscale(options.get("autoscale"))  # a bad range is reported first
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(options) - known
        if unknown:
            public = sorted({*known, "model"} - {"autoscale_min", "autoscale_max"})
            raise SpecError(f"unknown option(s) {sorted(unknown)}; known: {', '.join(public)}")
        return cls(**options)

    def overrides(self) -> dict[str, Any]:
        """Dotted spec field -> value, for every option (None values are skipped later)."""
        lo, hi = parse_autoscale(self.autoscale)
        if self.k_schedule:  # vllm.dynamic_k loads only for a schedule (cold start)
            from ...vllm.dynamic_k import parse_k_schedule
        return {
            "endpoint.instance_type": self.instance_type,
            "endpoint.instance_count": self.instance_count,
            "speculative.mode": self.mode,
            "speculative.num_speculative_tokens": self.k,
            "speculative.num_speculative_tokens_per_batch_size": (
                parse_k_schedule(self.k_schedule) if self.k_schedule else None
            ),
            "drafter.source": self.drafter,
            "drafter.bucket": self.bucket,
            "endpoint.fallback_instance_types": self.fallback,
            "autoscaling.target_concurrency": self.target_concurrency,
            "autoscaling.target_invocations": self.target_invocations,
            "autoscaling.min_instances": lo if lo is not None else self.autoscale_min,
            "autoscaling.max_instances": hi if hi is not None else self.autoscale_max,
            "model_data": self.model_data,
            "container.image": self.image,
            "container.vllm_version": self.vllm_version,
            "endpoint.name": self.name,
            "endpoint.routing_strategy": self.routing_strategy,
            "role": self.role,
            "region": self.region,
            "endpoint.hosting": self.hosting
            or ("inference-components" if self._component_options_given() else None),
            "inference_components.components": [parse_component(c) for c in self.components]
            if self.components
            else None,
            "inference_components.scale_to_zero": self.scale_to_zero,
            "inference_components.copies": self.copies,
            "inference_components.accelerators_per_copy": self.accelerators_per_copy,
            "inference_components.min_instances": self.min_instances,
            "inference_components.max_instances": self.max_instances,
            "inference_components.scale_in.strategy": self.scale_in_strategy,
            "inference_components.scale_in.max_step_size": self.scale_in_max_step,
            "inference_components.scale_in.cooldown_minutes": self.scale_in_cooldown_minutes,
            "monitoring.enabled": self.monitor,
            **rollout_overrides(self.rollout, self.bake),
            "endpoint.ttl": self.ttl,
            "endpoint.ttl_role": self.ttl_role,
        }

    def _component_options_given(self) -> bool:
        """--component, --scale-to-zero and the rest imply inference-component hosting."""
        given = (
            self.copies,
            self.accelerators_per_copy,
            self.min_instances,
            self.max_instances,
            self.scale_in_strategy,
            self.scale_in_max_step,
            self.scale_in_cooldown_minutes,
        )
        return bool(self.components or self.scale_to_zero) or any(v is not None for v in given)


# The table, in order: the keyword arguments every spec-taking SDK call writes out.
SPEC_OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(SpecOptions))


def options_from(arguments: Mapping[str, Any]) -> SpecOptions:
    """The spec options among a call's arguments (its `locals()`): each function writes
    them as parameters for its signature, and hands them on as one SpecOptions here."""
    return SpecOptions(**{n: arguments[n] for n in SPEC_OPTION_NAMES if n in arguments})


def rollout_overrides(rollout: Any, bake: str | float | None) -> dict[str, Any]:
    """`rollout="canary:25%"`, `bake="10m"` -> the `endpoint.rollout` fields they set. A
    mapping or a `RolloutSpec` (the SDK's) is the whole section. The strategy and the size
    are checked by the spec (`RolloutSpec`), so a bad one is the spec's SpecError naming the
    field, from the CLI and the SDK alike."""
    out: dict[str, Any] = dict.fromkeys(
        (
            "endpoint.rollout",  # first: the fields below land on it
            "endpoint.rollout.strategy",
            "endpoint.rollout.size",
            "endpoint.rollout.bake",
        )
    )
    if isinstance(rollout, Mapping) or hasattr(rollout, "model_dump"):
        whole = (
            rollout.model_dump(exclude_unset=True) if hasattr(rollout, "model_dump") else rollout
        )
        out["endpoint.rollout"] = dict(whole)
    elif rollout is not None:
        if not isinstance(rollout, str):
            raise SpecError(
                text("rollout: a strategy name, e.g. canary or canary:1, not {got!r}", got=rollout),
                field="rollout",
                value=rollout,
                rule="all-at-once, canary[:SIZE], linear[:SIZE] or rolling[:SIZE], or a mapping",
            )
        strategy, _, size = rollout.strip().partition(":")
        out["endpoint.rollout.strategy"] = strategy
        # A strategy given without a size resets it: the old strategy's size may not apply.
        out["endpoint.rollout.size"] = size or CLEARED
    if bake is not None:
        out["endpoint.rollout.bake"] = bake
    return out


def parse_autoscale(autoscale: str | None) -> tuple[int | None, int | None]:
    """ "MIN:MAX" -> (MIN, MAX); None -> (None, None)."""
    if autoscale is None:
        return None, None
    lo, sep, hi = str(autoscale).partition(":")
    if not sep or not lo.strip().isdigit() or not hi.strip().isdigit():
        raise SpecError(
            text("autoscaling: {autoscale} takes MIN:MAX, e.g. 1:4 (got {got!r})", got=autoscale),
            field="autoscale",
            value=autoscale,
            rule="MIN:MAX",
        )
    return int(lo), int(hi)


def build_spec(
    model: str | None,
    spec_file: str | Path | None,
    options: SpecOptions,
    *,
    base: dict[str, Any] | None = None,
) -> DeploymentSpec:
    """A spec file or a `base` document (optional) overlaid with `options`. The one
    mapping from options to spec fields, for the CLI and the SDK alike."""
    overrides = options.overrides()
    overrides["model"] = model
    if spec_file is not None:
        return load_spec(spec_file, overrides)
    if model is None and not (base and base.get("model")):
        raise SpecError(
            "model: no model given",
            remedy=text(
                "give a MODEL argument (see `{models}`) or a spec file with {spec_file}",
                models=Call("models"),
            ),
            field="model",
        )
    if base and options.mode == "baseline" and options.k is None:
        # Switching a deployed p-eagle/eagle3 spec to baseline: its K no longer applies.
        spec = {k: v for k, v in (base.get("speculative") or {}).items()}
        spec.pop("num_speculative_tokens", None)
        base = {**base, "speculative": spec}
    return spec_from_data(merge_overrides(base or {}, overrides))


def spec_from_options(
    model: str | None = None,
    spec_file: str | Path | None = None,
    *,
    base: dict[str, Any] | None = None,
    **options: Any,
) -> DeploymentSpec:
    """A validated spec from keywords, as `plan` builds it.

    Args:
        model: a catalog alias or JumpStart id.
        spec_file: a spec file the keywords are laid over.
        base: a spec as a dict, laid under the file and the keywords.
        options: the spec options as keywords (`k=7`, `mode="eagle3"`,
            `autoscale="1:4"`), as `SpecOptions` documents them.

    Returns:
        The validated `DeploymentSpec`.

    Raises:
        SpecError: a bad value, naming its field.
    """
    return build_spec(model, spec_file, SpecOptions.from_keywords(options), base=base)


def _option_docs() -> dict[str, list[str]]:
    """Each spec option's entry in SpecOptions' `Attributes:` section: name -> its lines
    (the first after `name: `, continuation lines as written)."""
    doc = SpecOptions.__doc__ or ""
    lines = doc.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.strip() == "Attributes:")
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    entry = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    for ln in lines[start + 1 :]:
        if not ln.strip():
            break
        indent = len(ln) - len(ln.lstrip())
        if indent == entry and ":" in ln:
            name, _, first = ln.strip().partition(":")
            current = out[name] = [first.strip()]
        elif current is not None:
            current.append(ln.strip())
    return out


def documents_spec_options(func: Any) -> Any:
    """`func`'s docstring with an `Args:` entry for each spec option it takes that the
    docstring does not describe, from the one table's own descriptions (SpecOptions), so
    plan, deploy, diff, apply and update document every keyword without five copies."""
    import inspect

    doc = func.__doc__ or ""
    params = [p for p in inspect.signature(func).parameters if p in SPEC_OPTION_NAMES]
    lines = doc.split("\n")
    try:
        at = next(i for i, ln in enumerate(lines) if ln.strip() == "Args:")
    except StopIteration:
        return func
    head = len(lines[at]) - len(lines[at].lstrip())
    end = at + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > head
    ):
        end += 1
    while end > at + 1 and not lines[end - 1].strip():
        end -= 1
    described = {
        ln.strip().partition(":")[0]
        for ln in lines[at + 1 : end]
        if len(ln) - len(ln.lstrip()) == head + 4
    }
    docs = _option_docs()
    added: list[str] = []
    for name in params:
        if name in described or name not in docs:
            continue
        first, *rest = docs[name]
        added.append(" " * (head + 4) + f"{name}: {first}")
        added += [" " * (head + 8) + more for more in rest]
    func.__doc__ = "\n".join([*lines[:end], *added, *lines[end:]])
    return func
