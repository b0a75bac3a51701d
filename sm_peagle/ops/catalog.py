"""The catalog as SDK calls: `models()`, `instances()`, `schema()` and `recommend()`,
the methods of `CatalogOps` (a part of `sm_peagle.Client`).

`peagle models|instances|schema|recommend` each call one of these and render the result.
Nothing here prints: what a person should see while it runs goes to the client's
`progress`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Param, Phrase, SpecError, text
from .renamed import renamed_keywords
from .session import Session

if TYPE_CHECKING:
    from ..catalog.instances import InstanceType
    from ..catalog.models import ModelEntry
    from ..planning.recommend import Candidate

__all__ = ["RECOMMEND_MODES", "CatalogOps", "Recommendation"]

RECOMMEND_MODES = ("p-eagle", "eagle3", "baseline")


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


class CatalogOps(Session):
    """The catalog: `models`, `instances`, `schema` and `recommend` (no AWS request but
    `instances(live_prices=True)`'s Price List reads)."""

    def models(self) -> list[ModelEntry]:
        """The models with published P-EAGLE heads, in catalog order.

        Returns:
            One `ModelEntry` per model (each has `to_dict()`).
        """
        from ..catalog.models import MODELS

        return list(MODELS)

    def instances(self, live_prices: bool = False) -> list[InstanceType]:
        """The GPU instance types peagle deploys to, with their $/h in the client's region
        (default: the configured region, else us-east-1).

        Args:
            live_prices: fill `usd_per_hour` from the AWS Price List API; a type whose price
                could not be read keeps the catalog price and says why in `price_note`.
                The client's `progress` gets the "talking to" line and one warning line
                when lookups failed.

        Returns:
            One `InstanceType` per type (each has `to_dict()`).
        """
        from ..catalog.instances import INSTANCES

        items = list(INSTANCES.values())
        if not live_prices:
            if self.region is None:
                return items
            from ..catalog.regional_prices import for_region

            return for_region(items, self.region)  # another region's price is unknown here
        from ..aws import AwsContext, resolve_region
        from ..lifecycle.live_prices import with_live_prices
        from .target import talking_to

        aws = self._aws
        if aws is None:
            region = resolve_region(self.region) or "us-east-1"
            aws = AwsContext(region, self.profile, endpoint_url=self.endpoint_url)
        region = aws.session.region_name or "us-east-1"
        self._say(talking_to(region, endpoint_url=aws.endpoint_url))
        items = with_live_prices(items, region, aws)
        notes = sorted({i.price_note for i in items if i.price_note})
        if notes:
            # A proxy or a non-AWS endpoint may answer with an HTML page: one readable line.
            line = re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", notes[0])).strip()
            more = ""
            if len(notes) > 1:
                more = text(" (and {n} other note(s); see {json})", n=len(notes) - 1,
                            json=Phrase("json"))  # fmt: skip
            self._say(text("warning: live prices: {line}{more}", line=line[:300], more=more))
        return items

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the deployment spec.

        Returns:
            The schema, a JSON document.
        """
        from ..planning.spec.model import DeploymentSpec

        return DeploymentSpec.model_json_schema()

    @renamed_keywords(concurrency="sequences", results="results_dir")
    def recommend(
        self,
        model: str,
        *,
        sequences: int | None = None,
        budget: float | None = None,
        mode: str | None = None,
        max_model_len: int = 8192,
        results_dir: str | Path | None = None,
    ) -> Recommendation:
        """Rank the catalog instance types where `model` and its drafter fit, by $/h and
        headroom (or, with `results_dir`, by measured $ per 1M output tokens).

        Args:
            model: a catalog alias or JumpStart id.
            sequences: how many sequences of `max_model_len` tokens the KV cache must hold
                at once (default 1). `concurrency=` still works for one release, with a
                FutureWarning.
            budget: max $/h.
            mode: p-eagle, eagle3 or baseline (no drafter).
            max_model_len: the context length each sequence may reach.
            results_dir: a directory of bench/sweep JSON results for this model.
                `results=` still works for one release, with a FutureWarning.

        Returns:
            The ranked candidates and the basis of the ranking.

        Raises:
            SpecError: any bad argument (an unknown model, a mode, a size below 1, a budget
                not above 0, results that are missing or of another model).
        """
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
                remedy=text(
                    "{a}, {b} or {c}",
                    **{k: Param("mode", m) for k, m in zip("abc", RECOMMEND_MODES, strict=True)},
                ),  # fmt: skip
                field="mode",
                value=mode,
                rule="p-eagle, eagle3 or baseline",
            )
        for key, value in (("sequences", sequences), ("max_model_len", max_model_len)):
            if value is not None and value < 1:
                raise SpecError(
                    text("{p}: must be at least 1 (got {v})", p=Param(key), v=value),
                    remedy=text("{p} 1 or more", p=Param(key)),
                    field=key,
                    value=value,
                    rule=">= 1",
                )
        if budget is not None and budget <= 0:
            raise SpecError(
                text("{budget}: must be a positive $/h (got {b})", b=f"{budget:g}"),
                remedy=text(
                    "a budget above 0 in $/h, e.g. {b}, or leave it out", b=Param("budget", 20)
                ),
                field="budget",
                value=budget,
                rule="> 0 ($/h)",
            )
        docs: list[dict] = []
        if results_dir is not None:
            results_dir = Path(results_dir)
            files = sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []
            if not files:
                raise SpecError(
                    text("{results_dir}: no result JSON files in {r}", r=results_dir),
                    field="results_dir",
                    value=str(results_dir),
                )
            docs = _results_for(entry, results_dir, files)
        cands = candidates(
            entry,
            speculative=mode != "baseline",
            max_model_len=max_model_len,
            budget_usd_per_hour=budget,
            sequences=sequences,
        )
        basis = "fit and headroom: peagle's estimate; $/h: catalog or Price List"
        if results_dir is None:
            basis += " (no measurement)"
        else:
            cands = apply_results(cands, docs)
            if all(measured_on_aws(d) for d in docs):
                basis += "; throughput: measured"
            elif any(throughput_basis(d).startswith("SIMULATED") for d in docs):
                basis += "; throughput: SIMULATED (a plugin's local target), not a measurement"
            else:  # a local target's real engine: real tokens, not AWS hardware
                basis += "; throughput: a local target's real engine, not measured on AWS"
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
        what = f"no results for {entry.alias} in {results}{seen}"
        raise SpecError(
            text("{results_dir}: {what}", what=what),
            remedy=text("bench or sweep {a}, or drop {results_dir}", a=entry.alias),
            field="results_dir",
            value=str(results),
        )
    return docs
