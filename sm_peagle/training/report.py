"""The training report a job writes beside its head (`peagle-training-report.json`), read
into what a user wants to know: per-depth validation accuracy, and what acceptance to
expect once the head serves.

Depth d of a P-EAGLE head predicts the token d+1 places ahead, given that the earlier
ones were right; its validation accuracy a_d is the chance a draft at position d is
accepted when positions 0..d-1 were (at temperature 0, greedy verification). So the
position-0 acceptance is a_0 and the expected number of tokens each verification step
emits is 1 + a_0 + a_0·a_1 + … + a_0·…·a_{K-1} (the target's own token, then each draft
while all before it were accepted). Facts 14: on the random tiny target the trainer's
depth-0 accuracy (0.52) matched the served position-0 acceptance (54%).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["REPORT_FILE", "NOT_LEARNED", "TrainingReport", "expected_accepted_length"]

REPORT_FILE = "peagle-training-report.json"
# Below this depth-0 accuracy a head drafts almost nothing that is accepted.
NOT_LEARNED = 0.05


def expected_accepted_length(accuracies: list[float]) -> float:
    """1 + a0 + a0·a1 + …: tokens per verification step, drafts accepted in order."""
    total, run = 1.0, 1.0
    for a in accuracies:
        run *= a
        total += run
    return total


@dataclass(frozen=True)
class TrainingReport:
    """What the trainer measured, and what follows for serving.

    Attributes:
        steps: optimizer steps run (0: the head was written untrained).
        k: depths trained.
        per_depth_val_accuracy: validation accuracy at each depth (K values).
        train_loss_first: the first step's loss (None without steps).
        train_loss_last: the last step's loss.
        samples: training rows.
        val_samples: validation rows.
        speculators_version: the trainer's version.
        backend: how continuations and hidden states were made (`gpu`, `cpu`, or
            `simulated` in a sandbox without a trainer).
        warnings: what the report says about the head (it has not learned, ...).
    """

    steps: int
    k: int
    per_depth_val_accuracy: list[float]
    train_loss_first: float | None = None
    train_loss_last: float | None = None
    samples: int | None = None
    val_samples: int | None = None
    speculators_version: str | None = None
    backend: str | None = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> TrainingReport:
        acc = [float(a) for a in doc.get("per_depth_val_accuracy") or []]
        steps = int(doc.get("steps") or 0)
        report = cls(
            steps=steps,
            k=int(doc.get("k") or len(acc)),
            per_depth_val_accuracy=acc,
            train_loss_first=doc.get("train_loss_first"),
            train_loss_last=doc.get("train_loss_last"),
            samples=doc.get("samples"),
            val_samples=doc.get("val_samples"),
            speculators_version=doc.get("speculators_version"),
            backend=doc.get("backend"),
        )
        report.warnings.extend(_warnings(report))
        return report

    @property
    def expected_position0_acceptance(self) -> float | None:
        """Position-0 acceptance to expect at temperature 0: the depth-0 accuracy."""
        return self.per_depth_val_accuracy[0] if self.per_depth_val_accuracy else None

    @property
    def expected_accepted_length(self) -> float | None:
        """Tokens per verification step to expect: 1 + a0 + a0·a1 + …"""
        if not self.per_depth_val_accuracy:
            return None
        return expected_accepted_length(self.per_depth_val_accuracy)

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "k": self.k,
            "per_depth_val_accuracy": list(self.per_depth_val_accuracy),
            "train_loss_first": self.train_loss_first,
            "train_loss_last": self.train_loss_last,
            "samples": self.samples,
            "val_samples": self.val_samples,
            "speculators_version": self.speculators_version,
            "backend": self.backend,
            "expected_position0_acceptance": self.expected_position0_acceptance,
            "expected_accepted_length": self.expected_accepted_length,
            "warnings": list(self.warnings),
        }


def _warnings(r: TrainingReport) -> list[str]:
    out = []
    a0 = r.expected_position0_acceptance
    if r.steps == 0:
        out.append("the head has not learned: it was trained for 0 steps (expect ~0 acceptance)")
    elif a0 is not None and a0 < NOT_LEARNED:
        out.append(
            f"the head has not learned: depth-0 validation accuracy {a0:.0%} is below "
            f"{NOT_LEARNED:.0%} (expect ~0 acceptance); train longer or on more data"
        )
    if r.backend == "simulated":
        out.append(
            "a simulated job (no trainer environment): the head is synthetic and the "
            "accuracies are placeholders"
        )
    return out
