"""The catalog as SDK calls: `models()`, `instances()`, `schema()` and `recommend()`.

`peagle models|instances|schema|recommend` each call one of these and render the result.
Nothing here prints: what a person should see while it runs goes to `progress(line)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError

if TYPE_CHECKING:
    from ..catalog.instances import InstanceType
    from ..catalog.models import ModelEntry
    from ..planning.recommend import Candidate

__all__ = ["RECOMMEND_MODES", "Recommendation", "instances", "models", "recommend", "schema"]

Progress = Callable[[str], None]
RECOMMEND_MODES = ("p-eagle", "eagle3", "baseline")


def models() -> list[ModelEntry]:
    """The models with published P-EAGLE heads (each has `to_dict()`), in catalog order."""
    from ..catalog.models import MODELS

    return list(MODELS)


def instances(
    live_prices: bool = False, *, region: str | None = None, progress: Progress | None = None
) -> list[InstanceType]:
    """The GPU instance types peagle deploys to (each has `to_dict()`).

    `live_prices=True` fills `usd_per_hour` from the AWS Price List API for `region`
    (default: the configured region, else us-east-1); a type whose price could not be read
    keeps the catalog price and says why in `price_note`. `progress` gets the "talking to"
    line and one warning line when lookups failed."""
    from ..catalog.instances import INSTANCES

    items = list(INSTANCES.values())
    if not live_prices:
        if region is None:
            return items
        from ..catalog.regional_prices import for_region

        return for_region(items, region)  # another region's price is unknown here
    from ..aws import AwsContext, resolve_region
    from ..catalog.pricing import with_live_prices
    from .target import talking_to

    aws = AwsContext(resolve_region(region) or "us-east-1")
    _say(progress, talking_to(aws.region))
    items = with_live_prices(items, aws.region, aws)
    notes = sorted({i.price_note for i in items if i.price_note})
    if notes:
        # A proxy or a non-AWS endpoint may answer with an HTML page: one readable line.
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", notes[0])).strip()
        more = f" (and {len(notes) - 1} other note(s); see --json)" if len(notes) > 1 else ""
        _say(progress, f"warning: live prices: {text[:300]}{more}")
    return items


def schema() -> dict[str, Any]:
    """The JSON Schema of the deployment spec (`peagle schema`)."""
    from ..planning.spec.model import DeploymentSpec

    return DeploymentSpec.model_json_schema()


@dataclass(frozen=True)
class Recommendation:
    """Where a model fits, best first; `to_dict()` is the `peagle recommend --json` document.

    Attributes:
        model: The model ranked for.
        basis: What the ranking rests on ($/h and headroom, or measured $ per 1M tokens).
        candidates: The instance types it fits, best first.
    """

    model: str
    basis: str
    candidates: list[Candidate] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle recommend --json` prints: the model, what the ranking is based on,
        and the candidates."""
        return {
            "model": self.model,
            "basis": self.basis,
            "candidates": [c.to_dict() for c in self.candidates],
        }


def recommend(
    model: str,
    *,
    concurrency: int | None = None,
    budget: float | None = None,
    mode: str | None = None,
    max_model_len: int = 8192,
    results: str | Path | None = None,
) -> Recommendation:
    """Rank the catalog instance types where `model` and its drafter fit, by $/h and
    headroom (or, with `results`, a directory of bench/sweep JSON results for this model,
    by measured $ per 1M output tokens).

    `concurrency`: max-length sequences to hold at once; `budget`: max $/h; `mode`:
    p-eagle, eagle3 or baseline (no drafter). Raises SpecError for any bad argument."""
    from ..catalog.models import find_model
    from ..catalog.names import unknown_model
    from ..planning.recommend import (
        apply_results,
        candidates,
        measured_on_aws,
        throughput_basis,
    )

    entry = find_model(model)
    if entry is None:
        raise unknown_model(model)
    if mode not in (None, *RECOMMEND_MODES):
        raise SpecError(
            f"speculative.mode: {mode!r} is not p-eagle, eagle3 or baseline",
            remedy="--mode p-eagle, --mode eagle3 or --mode baseline",
        )
    for flag, value in (("--concurrency", concurrency), ("--max-model-len", max_model_len)):
        if value is not None and value < 1:
            raise SpecError(f"{flag}: must be at least 1 (got {value})", remedy=f"{flag} 1 or more")
    if budget is not None and budget <= 0:
        raise SpecError(
            f"--budget: must be a positive $/h (got {budget:g})",
            remedy="a budget above 0 in $/h, e.g. --budget 20, or leave it out",
        )
    docs: list[dict] = []
    if results is not None:
        results = Path(results)
        files = sorted(results.glob("*.json")) if results.is_dir() else []
        if not files:
            raise SpecError(f"--results: no result JSON files in {results}")
        docs = _results_for(entry, results, files)
    cands = candidates(
        entry,
        speculative=mode != "baseline",
        max_model_len=max_model_len,
        budget_usd_per_hour=budget,
        concurrency=concurrency,
    )
    basis = "fit and headroom: peagle's estimate; $/h: catalog or Price List"
    if results is None:
        basis += " (no measurement)"
    else:
        cands = apply_results(cands, docs)
        if all(measured_on_aws(d) for d in docs):
            basis += "; throughput: measured"
        elif any(throughput_basis(d).startswith("SIMULATED") for d in docs):
            basis += "; throughput: SIMULATED (sandbox), not a measurement"
        else:  # the sandbox's real engine (CPU): real tokens, not AWS hardware
            basis += "; throughput: sandbox's real engine (CPU), not measured on AWS"
    return Recommendation(model=entry.alias, basis=basis, candidates=cands)


def _results_for(entry: Any, results: Path, files: list[Path]) -> list[dict]:
    """The result documents of this model only; another model's numbers never rank it."""
    from ..catalog.models import find_model

    docs, others = [], set()
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        found = find_model(str(doc.get("model"))) if doc.get("model") else None
        if found is entry:
            docs.append(doc)
        else:
            others.add(str(doc.get("model") or "unknown model"))
    if not docs:
        seen = f" (they are for: {', '.join(sorted(others))})" if others else ""
        raise SpecError(
            f"--results: no results for {entry.alias} in {results}{seen}",
            remedy=f"bench or sweep {entry.alias}, or drop --results",
        )
    return docs


def _say(progress: Progress | None, line: str) -> None:
    if progress is not None:
        progress(line)
