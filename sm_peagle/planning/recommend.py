"""Which instance type to deploy on: every catalog type where the model and its drafter
fit, ranked by $/h (or by measured cost per 1M output tokens when bench results exist).

Estimates and measurements are kept apart: the fit and headroom are peagle's estimate
(see planning.fit.fit_budget), prices are AWS's published or Price List figures, and only
bench results are measurements.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..catalog.instances import INSTANCES
from ..catalog.models import ModelEntry
from .steps.fit import DEFAULT_GPU_MEMORY_UTILIZATION, GB, fit_budget


@dataclass
class Candidate:
    instance_type: str
    gpus: int
    gpu: str
    usd_per_hour: float | None
    kv_headroom_gb: float
    max_length_sequences: int
    fits: bool
    usd_per_million_output_tokens: float | None = None
    measured_output_tokens_per_s: float | None = None
    basis: str = "estimate"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def candidates(
    model: ModelEntry,
    *,
    speculative: bool = True,
    max_model_len: int = 8192,
    budget_usd_per_hour: float | None = None,
    sequences: int | None = None,
) -> list[Candidate]:
    """Types where the model fits with KV room for `sequences` max-length sequences."""
    if model.weight_bytes is None:
        from ..errors import SpecError

        raise SpecError(
            f"model: the size of {model.alias} is unknown; cannot rank instances",
            field="model",
            value=model.alias,
        )
    out = []
    head = model.drafter.bytes if model.drafter else None
    for inst in INSTANCES.values():
        if inst.arm_host:
            continue  # the x86 vLLM image cannot run there
        b = fit_budget(
            model,
            inst,
            inst.gpus,
            drafter_bytes=head,
            speculative=speculative,
            max_model_len=max_model_len,
            gpu_memory_utilization=DEFAULT_GPU_MEMORY_UTILIZATION,
        )
        needed = max(sequences or 1, 1)
        fits = b.sequences >= needed
        if not fits:
            continue
        if budget_usd_per_hour is not None and (
            inst.usd_per_hour is None or inst.usd_per_hour > budget_usd_per_hour
        ):
            continue
        out.append(
            Candidate(
                inst.name,
                inst.gpus,
                inst.gpu,
                inst.usd_per_hour,
                round(b.room / GB, 1),
                b.sequences,
                fits,
            )
        )
    # Known prices first, cheapest first; then unknown prices by least GPU memory used.
    out.sort(key=lambda c: (c.usd_per_hour is None, c.usd_per_hour or 0, -c.kv_headroom_gb))
    return out


def measured_on_aws(doc: dict[str, Any]) -> bool:
    """Whether a bench document's numbers were measured on AWS, for every version: its
    label says AWS (`MEASURED` in peagle.bench/1) and it has no `simulated: true`. A
    document with no label counts when it says `simulated: false`; one saying neither is
    not taken as measured."""
    from .. import settings

    if doc.get("simulated"):
        return False
    label = doc.get("label")
    if label is None:
        return doc.get("simulated") is False
    return label in (settings.AWS, "MEASURED")  # MEASURED: peagle.bench/1's word


def throughput_basis(doc: dict[str, Any]) -> str:
    """What a candidate's throughput rests on: measured on AWS, made up (SIMULATED: no
    model ran), or a plugin target's real engine, named by its label (from
    `peagle.bench/3` on a real engine's document has no `simulated` key)."""
    if measured_on_aws(doc):
        return "measured throughput"
    label = str(doc.get("label") or "")
    engine = str(doc.get("engine") or "")
    if doc.get("simulated") and not engine.startswith("vllm "):  # made up, every version
        # Named by the target's label (peagle.bench/1's label was the bare word).
        named = label not in ("", "SIMULATED")
        return f"SIMULATED throughput ({label})" if named else "SIMULATED throughput"
    return f"{label} throughput, not measured on AWS"


def apply_results(cands: list[Candidate], results: list[dict[str, Any]]) -> list[Candidate]:
    """Rank by measured cost per 1M output tokens where a bench result exists for the
    type: best aggregate output tokens/s of any level, at the type's $/h."""
    best: dict[str, float] = {}
    basis: dict[str, str] = {}
    for r in results:
        itype = r.get("instance_type")
        for level in r.get("levels", []):
            otps = level.get("output_tokens_per_s")
            if itype and otps and float(otps) > best.get(itype, 0.0):
                best[itype] = float(otps)
                basis[itype] = throughput_basis(r)
    for c in cands:
        if c.instance_type in best:
            c.measured_output_tokens_per_s = best[c.instance_type]
            c.basis = basis[c.instance_type]
            if c.usd_per_hour is not None:
                c.usd_per_million_output_tokens = round(
                    c.usd_per_hour / (best[c.instance_type] * 3600) * 1e6, 4
                )
    cands.sort(
        key=lambda c: (
            c.usd_per_million_output_tokens is None,
            c.usd_per_million_output_tokens or 0,
            c.usd_per_hour is None,
            c.usd_per_hour or 0,
        )
    )
    return cands
