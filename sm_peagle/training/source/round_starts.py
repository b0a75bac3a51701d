"""What position-0 acceptance vLLM will count for the trained head: one evaluation pass over
the validation rows, then vLLM's draft rounds walked over its per-position results.

Beside `peagle_train.py` in the job's source dir; like it, this needs only the standard
library (the walk) and torch + speculators (the pass), never peagle.

Why the trainer's number is not the served one. speculators' `position_0_acc` is per TOKEN:
depth-0 correctness averaged over every loss-masked position of the validation rows. vLLM's
position-0 rate (`num_accepted_tokens_per_pos[0] / num_drafts`) is per DRAFT ROUND: a round
starting at position t whose drafts are accepted up to j emits 1 + j tokens and the next
round starts at t + j + 1, so the positions right after an accepted first draft are never
drafted at depth 0. When correctness clusters (right where the head was right), the skipped
positions are mostly right ones and the per-round rate is lower. The pass gives c_t (depth-0
right or wrong at each validation position, exactly as speculators counts it); the walk
averages c_t over round starts.

The walk's one approximation: speculators' per-depth accuracies a_d are unconditional
(depth-d chains are sampled whether or not depths 0..d-1 were right), so P(depth d accepted
| depth d-1 accepted) is taken as q_d = a_d / a_{d-1} (clipped to [0, 1]). Depth 0 uses the
pass's c_t itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

# At most this many validation rows go through the pass: one forward each, and the pooled
# rate is already stable well below it (the conformance target has 26).
MAX_ROWS = 512
REPORT_FILE = "peagle-training-report.json"  # as peagle_train.py's
BASIS = (
    "per draft round at temperature 0, K={k}: depth-0 correctness of the trained head at each "
    "of {positions} validation positions ({rows} rows, speculators' own forward and targets), "
    "averaged over the positions where vLLM's rounds start (a round accepting j drafts "
    "skips j positions); drafts past the first accepted with q_d = a_d / a_(d-1) from "
    "per_depth_val_accuracy"
)


def conditional_rates(per_depth: list[float], k: int) -> list[float]:
    """q_1..q_{K-1}: the chance depth d is accepted once depth d-1 was, approximated by the
    ratio of speculators' unconditional per-depth accuracies (0 where a_{d-1} is 0)."""
    q: list[float] = []
    for d in range(1, k):
        prev = per_depth[d - 1] if d - 1 < len(per_depth) else 0.0
        cur = per_depth[d] if d < len(per_depth) else 0.0
        q.append(min(1.0, max(0.0, cur / prev)) if prev > 0 else 0.0)
    return q


def round_start_walk(rows: list[list[int]], q: list[float]) -> tuple[float, float, float]:
    """Walk vLLM's draft rounds over per-position depth-0 correctness, without sampling.

    rows: per validation row, c_t in {0, 1} for each position t in order (t = 0 is the first
    draft after the prompt). q: q_1..q_{K-1} (K = len(q) + 1 drafts per round).

    A round starting at t accepts 0 drafts if c_t = 0 (the next round starts at t + 1), else
    j in 1..K drafts with P(j) = q_1···q_{j-1}·(1 - q_j) (q_K = 0), the next round starting at
    t + j + 1. With s_t the probability that a round starts at t (s_0 = 1), returns, pooled
    over rows: the position-0 rate sum s_t c_t / sum s_t, the accepted length per round
    sum s_t (1 + c_t E[j]) / sum s_t (vLLM's mean acceptance length), and the rounds.
    """
    k = len(q) + 1
    p_j: list[float] = []  # P(j) for j = 1..K, given the first draft was accepted
    run = 1.0
    for j in range(1, k + 1):
        stop = 1.0 - q[j - 1] if j < k else 1.0
        p_j.append(run * stop)
        run *= q[j - 1] if j < k else 0.0
    mean_j = sum(j * p for j, p in enumerate(p_j, 1))
    hits = length = starts = 0.0
    for c in rows:
        s = [0.0] * (len(c) + k + 1)
        s[0] = 1.0
        for t, right in enumerate(c):
            if s[t] == 0.0:
                continue
            starts += s[t]
            if right:
                hits += s[t]
                length += s[t] * (1.0 + mean_j)
                for j, p in enumerate(p_j, 1):
                    s[t + j + 1] += s[t] * p
            else:
                length += s[t]
                s[t + 1] += s[t]
    if starts == 0.0:
        return 0.0, 1.0, 0.0
    return hits / starts, length / starts, starts


def _device(torch: Any) -> Any:
    """The device speculators' trainer ran on: its `get_local_rank()` (an int rank on an
    accelerator; the CPU backend patches it to return the CPU device)."""
    import speculators.train.trainer as trainer_mod

    rank = trainer_mod.get_local_rank()
    if isinstance(rank, torch.device):
        return rank
    acc = torch.accelerator.current_accelerator()
    return torch.device(acc.type, int(rank)) if acc is not None else torch.device("cpu")


def draft_attn_impl(train_args: list[str]) -> str:
    """The backend's draft attention (`--draft-attn-impl=`), else sdpa: the same attention
    math as speculators' default flex attention, without needing torch.compile (the pass runs
    the forward uncompiled)."""
    for arg in train_args:
        if arg.startswith("--draft-attn-impl="):
            return arg.split("=", 1)[1]
    return "sdpa"


def depth0_correctness(
    head_dir: Path,
    dataset: Path,
    train_ratio: float,
    total_seq_len: int,
    train_args: list[str],
    max_rows: int = MAX_ROWS,
) -> list[list[int]]:
    """c_t per validation row: the trained head's depth-0 draft right or wrong at each
    loss-masked position, as speculators 0.9.0's validation counts it.

    Pinned to speculators 0.9.0's API: the validation split is its `ArrowDataset(split="val")`
    over the offline hidden states, each row goes through its `shift_batch`, and
    `PEagleDraftModel.forward` runs with `num_depths=1` (depth 0 only: anchors at every
    position). The forward's logits and targets are taken where it hands them to
    `speculators.models.peagle.core.compute_metrics` (no public per-position hook exists);
    correct = argmax(logits) == argmax(targets) where the loss mask is 1, as its
    `compute_accuracy_multi_step` counts."""
    import speculators.models.peagle.core as core
    import torch
    from speculators.models.eagle3.data import shift_batch
    from speculators.models.peagle import PEagleDraftModel, PEagleSpeculatorConfig
    from speculators.train.data import ArrowDataset

    device = _device(torch)
    cfg = PEagleSpeculatorConfig.from_pretrained(str(head_dir))
    # The draft layer's attention, through transformers' public constructor argument (the
    # saved config has none, and speculators would then pick flex attention).
    layer = cfg.transformer_layer_config
    cfg.transformer_layer_config = type(layer)(
        **{**layer.to_dict(), "attn_implementation": draft_attn_impl(train_args)}
    )
    head = PEagleDraftModel.from_pretrained(str(head_dir), config=cfg)
    head.load_verifier_weights()
    head.to(device).eval()
    rows = ArrowDataset(
        max_len=total_seq_len,
        datapath=str(dataset),
        on_missing="raise",
        train_ratio=train_ratio,
        split="val",
    )
    # On an accelerator speculators wraps forward in torch.compile; the original function
    # sees the patched compute_metrics and skips a recompile for num_depths=1.
    forward = PEagleDraftModel.forward
    forward = getattr(forward, "_torchdynamo_orig_callable", forward)
    seen: dict[str, Any] = {}

    def capture(**kwargs: Any) -> tuple[Any, dict]:
        seen.update(kwargs)
        return torch.zeros((), device=device), {}

    out: list[list[int]] = []
    original = core.compute_metrics
    core.compute_metrics = capture
    try:
        with torch.inference_mode():
            for i in range(min(len(rows), max_rows)):
                item = rows[i]
                if not isinstance(item, dict):
                    continue  # speculators' SampleUnavailable: validation skips it too
                b = shift_batch(item)
                if b["input_ids"].shape[0] == 0:
                    continue
                batch = {
                    k: b[k][None].to(device)
                    for k in ("hidden_states", "input_ids", "position_ids", "loss_mask")
                }
                batch["verifier_last_hidden_states"] = b["verifier_last_hidden_states"][None].to(
                    device
                )
                batch["document_ids"] = torch.zeros_like(batch["input_ids"])  # one row
                seen.clear()
                with torch.autocast(device.type, dtype=torch.bfloat16):
                    forward(head, **batch, num_depths=1, loss_config=None)
                right = seen["logits"][0].argmax(-1) == seen["targets"][0].argmax(-1)
                mask = seen["loss_mask"][0, seen["anchor_pos"] + seen["depth"]].bool()
                out.append([int(x) for x in right[mask].tolist()])
    finally:
        core.compute_metrics = original
    return out


def estimate(
    head_dir: Path,
    dataset: Path,
    report: dict[str, Any],
    train_ratio: float,
    total_seq_len: int,
    train_args: list[str],
) -> dict[str, Any]:
    """The report's round-start keys: the served position-0 rate and accepted length per
    round to expect, and what they are."""
    t0 = time.monotonic()
    rows = depth0_correctness(head_dir, dataset, train_ratio, total_seq_len, train_args)
    k = int(report["k"])
    q = conditional_rates(list(report.get("per_depth_val_accuracy") or []), k)
    pos0, length, _ = round_start_walk(rows, q)
    positions = sum(len(r) for r in rows)
    token_rate = sum(sum(r) for r in rows) / positions if positions else 0.0
    print(
        f"peagle-train: round-start estimate over {len(rows)} validation rows in "
        f"{time.monotonic() - t0:.1f} s: position-0 {pos0:.3f} per round "
        f"({token_rate:.3f} per token), accepted length {length:.3f}",
        flush=True,
    )
    return {
        "expected_position0_acceptance": round(pos0, 6),
        "expected_accepted_length": round(length, 6),
        "eval_position0_accuracy": round(token_rate, 6),
        "round_start_basis": BASIS.format(k=k, positions=positions, rows=len(rows)),
    }


def add_to_report(
    paths: Any, params: Any, dataset: Path, backend: Any, report: dict[str, Any]
) -> dict[str, Any]:
    """`estimate` merged into the report beside the head (rewritten). A failure of the pass
    leaves the report without the keys, says so in the log, and does not fail the job: the
    head is already written and the estimate only describes it."""
    path = paths.model / REPORT_FILE
    try:
        extra = estimate(
            paths.model,
            dataset,
            report,
            train_ratio=1.0 - params.val_fraction,
            total_seq_len=params.total_seq_len,
            train_args=list(backend.train_args()),
        )
    except Exception as exc:  # noqa: BLE001 - advisory: the head stands without it
        print(f"peagle-train: warning: no round-start estimate: {type(exc).__name__}: {exc}")
        return report
    report = {**report, **extra}
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report
