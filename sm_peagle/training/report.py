"""The training report a job writes beside its head (`peagle-training-report.json`), read
into what a user wants to know: per-depth validation accuracy, and what acceptance to
expect once the head serves.

The numbers, and what each one is:
- `per_depth_val_accuracy`: speculators' own validation accuracy per depth (its
  `position_{d}_acc`), a per-TOKEN rate: at depth 0, the share of all loss-masked positions
  of the validation rows where the head's draft is the target's greedy token. At depth d>0,
  over chains sampled whether or not the earlier depths were right (unconditional).
- `expected_position0_acceptance` / `expected_accepted_length`: what vLLM will count at
  temperature 0 with K drafts, per DRAFT ROUND (`num_accepted_tokens_per_pos[0] /
  num_drafts`, and 1 + accepted drafts per round). A round that accepts j drafts skips the
  next j positions, and right drafts cluster, so the per-round rate is lower than the
  per-token one (about 0.7x on the random tiny target). The job's entrypoint estimates it
  (`round_starts.py` in the job's source: the trained head drafts K tokens from every
  validation position, and vLLM's rounds are walked over how many of them are right) and
  says how in `round_start_basis`; `expected_per_position_acceptance` gives vLLM's
  per-position rates the same way.
- A report without that estimate (one an older entrypoint wrote) falls back to the depth-0
  accuracy, which overstates the per-round rate when right drafts cluster, and to
  1 + a_0 + a_0·a_1 + …, which treats the unconditional a_d as conditional. (The sandbox's
  simulated trainer writes the estimate's keys as labelled placeholders.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["REPORT_FILE", "NOT_LEARNED", "TrainingReport", "expected_accepted_length"]

REPORT_FILE = "peagle-training-report.json"
# Below this depth-0 accuracy a head drafts almost nothing that is accepted.
NOT_LEARNED = 0.05


def expected_accepted_length(accuracies: list[float]) -> float:
    """1 + a0 + a0·a1 + …: tokens per verification step if each a_d were the chance depth d
    is accepted once depth d-1 was (the fallback; speculators' a_d are unconditional)."""
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
        round_start_position0: the entrypoint's served position-0 estimate (per draft
            round), None in a report without it.
        round_start_accepted_length: the entrypoint's accepted length per round estimate.
        round_start_per_position: its acceptance per draft position (K values), per round.
        round_start_stderr: the position-0 estimate's standard error over the validation
            rows (prompts vary: with a few dozen rows it is several points).
        eval_position0_accuracy: the evaluation pass's own per-token depth-0 accuracy (it
            repeats speculators' depth-0 number on the reloaded head).
        round_start_basis: how the entrypoint made its estimate, in words.
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
    round_start_position0: float | None = None
    round_start_accepted_length: float | None = None
    round_start_per_position: list[float] | None = None
    round_start_stderr: float | None = None
    eval_position0_accuracy: float | None = None
    round_start_basis: str | None = None
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
            round_start_position0=_number(doc.get("expected_position0_acceptance")),
            round_start_accepted_length=_number(doc.get("expected_accepted_length")),
            round_start_per_position=_numbers(doc.get("expected_per_position_acceptance")),
            round_start_stderr=_number(doc.get("expected_position0_stderr")),
            eval_position0_accuracy=_number(doc.get("eval_position0_accuracy")),
            round_start_basis=doc.get("round_start_basis"),
        )
        report.warnings.extend(_warnings(report))
        return report

    @property
    def per_round(self) -> bool:
        """Whether the expected numbers are the entrypoint's per-draft-round estimate."""
        return self.round_start_position0 is not None

    @property
    def expected_position0_acceptance(self) -> float | None:
        """Served position-0 acceptance to expect at temperature 0: the entrypoint's
        per-round estimate, else (fallback) the depth-0 validation accuracy."""
        if self.round_start_position0 is not None:
            return self.round_start_position0
        return self.per_depth_val_accuracy[0] if self.per_depth_val_accuracy else None

    @property
    def expected_accepted_length(self) -> float | None:
        """Tokens per draft round to expect: the entrypoint's estimate, else (fallback)
        1 + a0 + a0·a1 + …"""
        if self.round_start_position0 is not None and self.round_start_accepted_length:
            return self.round_start_accepted_length
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
            "expected_per_round": self.per_round,
            "expected_per_position_acceptance": self.round_start_per_position,
            "expected_position0_stderr": self.round_start_stderr,
            "eval_position0_accuracy": self.eval_position0_accuracy,
            "round_start_basis": self.round_start_basis
            or "fallback (no round-start estimate in this report): the depth-0 validation "
            "accuracy and 1 + a0 + a0*a1 + ...; vLLM's per-round rate is lower",
            "warnings": list(self.warnings),
        }


def _warnings(r: TrainingReport) -> list[str]:
    out = []
    # "Not learned" is judged on what the trainer measured, per token.
    a0 = r.per_depth_val_accuracy[0] if r.per_depth_val_accuracy else None
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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _numbers(value: Any) -> list[float] | None:
    if not isinstance(value, list):
        return None
    out = [_number(v) for v in value]
    return [v for v in out if v is not None] if all(v is not None for v in out) else None
