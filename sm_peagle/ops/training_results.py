"""The result of `drafter_train` (`TrainResult`) and the reads and checks it makes before
anything is sent: the local data's prompts, a local or catalog target, the target judged
(architecture, draft vocabulary, where its weights are), and the cost estimate."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Call, Param, SpecError, text
from .result import KeyAccess

__all__ = [
    "TrainResult",
    "catalog_target",
    "judge_target",
    "local_target",
    "training_cost",
]


@dataclass(frozen=True)
class TrainResult(KeyAccess):
    """What `drafter_train` did (or, in a dry run, would do).

    Attributes:
        job_name: the training job's name.
        status: `Completed`, or `DryRun` (nothing was sent).
        head_uri: the S3 prefix the head is (or will be) under: what `deploy(drafter=)`
            takes.
        request: the exact CreateTrainingJob request.
        uploads: what the run uploads first (`{"what", "uri"}` each).
        report: the training report (`TrainingReport`: per-depth accuracy, expected
            acceptance), None in a dry run.
        check: the drafter check of the trained head (`DrafterCheck`), None in a dry run.
        warnings: what the report and the checks warn about ("the head has not learned").
        notes: what the run noticed (a target not read in a dry run, the cost).
        cost: the cost estimate (`usd_per_hour` None when the price is unknown; `max_usd`
            the ceiling at `max_runtime`).
        endpoint: the deployed endpoint's name, with `deploy=True`.
        next_step: what to run with the head (a `Text`: `deploy(…, drafter=…, k=…)` for a
            catalog target, in the SDK's words or the CLI's), None in a dry run or once
            deployed.
    """

    job_name: str
    status: str
    head_uri: str
    request: dict[str, Any]
    uploads: list[dict[str, str]] = field(default_factory=list)
    report: Any = None
    check: Any = field(default=None, repr=False)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)
    endpoint: str | None = None
    next_step: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle drafter train --json` prints."""
        return {
            "job_name": self.job_name,
            "status": self.status,
            "head_uri": self.head_uri,
            "uploads": list(self.uploads),
            "request": self.request,
            "report": self.report.to_dict() if self.report is not None else None,
            "check": self.check.to_dict() if self.check is not None else None,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "cost": dict(self.cost),
            "endpoint": self.endpoint,
            "next_step": str(self.next_step) if self.next_step is not None else None,
        }


def local_target(target: str) -> Any:
    from ..training.checks import TargetInfo

    root = Path(target).expanduser()
    config = root / "config.json"
    if not config.is_file():
        raise SpecError(
            text("{p}: {t} has no config.json", p=Param("target"), t=target),
            remedy="give a Hugging Face model directory (config.json and *.safetensors)",
            field="target",
            value=target,
        )
    try:
        doc = json.loads(config.read_text())
    except ValueError:
        raise SpecError(
            text("{p}: {t}/config.json is not JSON", p=Param("target"), t=target),
            remedy="give a Hugging Face model directory",
            field="target",
            value=target,
        ) from None
    size = sum(p.stat().st_size for p in root.glob("*.safetensors"))
    return TargetInfo.from_config(target, doc, weight_bytes=size or None, local_dir=str(root))


def catalog_target(target: str, say: Any) -> Any:
    from ..catalog.models import find_model
    from ..training.checks import TargetInfo
    from .deployment import refuse_target_only

    entry = find_model(target)
    if entry is None:
        raise SpecError(
            text(
                "{p}: {t} is not a catalog model, an s3:// prefix or a local directory",
                p=Param("target"),
                t=target,
            ),  # fmt: skip
            remedy=text(
                "give the target's S3 prefix or directory (`{c}` lists the catalog)",
                c=Call("models"),
            ),  # fmt: skip
            field="target",
            value=target,
        )
    refuse_target_only(entry.alias, say=say)
    return TargetInfo(
        source=target,
        architecture=entry.architecture,
        num_layers=entry.num_layers,
        hidden_size=entry.hidden_size,
        vocab_size=entry.vocab_size,
        weight_bytes=entry.weight_bytes,
        model_data=entry.model_data,
    )


def judge_target(info: Any, draft_vocab_size: int | None) -> int | None:
    from ..training.checks import check_architecture, check_draft_vocab

    check_architecture(info)
    draft = check_draft_vocab(draft_vocab_size, info)
    if info.model_data is None and info.local_dir is None:
        raise SpecError(
            text(
                "{p}: where {t}'s weights are in S3 is not known", p=Param("target"), t=info.source
            ),  # fmt: skip
            remedy="give the target's s3://bucket/prefix/ (its config.json and weights)",
            field="target",
            value=info.source,
        )
    return draft


def training_cost(
    instance_type: str, max_runtime: int, price: tuple[float | None, str] | None = None
) -> dict[str, Any]:
    """The most the job can bill: its instance's training price (`price`: the live figure
    and where it came from, or None and why it is unknown; `lifecycle.live_prices.
    training_price`) times the stopping condition. Never another type's or hosting's
    price: the catalog holds hosting prices only, and SageMaker prices training apart."""
    usd, source = price if price is not None else (None, "not looked up in a dry run")
    hours = max_runtime / 3600
    cost: dict[str, Any] = {
        "instance_type": instance_type,
        "usd_per_hour": usd,
        "max_usd": None if usd is None else round(usd * hours, 2),
        "max_runtime_seconds": max_runtime,
        "price_source": source if usd is not None else None,
    }
    if usd is None:
        cost["note"] = (
            f"training price of {instance_type} unknown ({source}); the job bills its run "
            f"time, at most {hours:g} h"
        )
    else:
        cost["note"] = (
            f"at most ${cost['max_usd']:,.2f}: {instance_type} at ${usd:g}/h for training "
            f"({source}), billed by run time: up to {hours:g} h (the stopping condition) "
            "plus the output's upload"
        )
    return cost
