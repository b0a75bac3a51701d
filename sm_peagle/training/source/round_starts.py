"""What acceptance vLLM will count for the trained head: one evaluation pass over the
validation rows, then vLLM's draft rounds walked over its per-position results.

Beside `peagle_train.py` in the job's source dir; like it, this needs only the standard
library (the walk) and torch + speculators (the pass), never peagle.

Why the trainer's number is not the served one. speculators' `position_0_acc` is per TOKEN:
depth-0 correctness averaged over every loss-masked position of the validation rows. vLLM's
position-0 rate (`num_accepted_tokens_per_pos[0] / num_drafts`) is per DRAFT ROUND: a round
starting at position t that accepts j drafts emits 1 + j tokens and the next round starts
at t + j + 1, so the positions right after accepted drafts are never drafted at depth 0.
When correctness clusters (right where the head was right), the skipped positions are mostly
right ones and the per-round rate is lower.

So the pass runs the head, as vLLM drafts, from every validation position t: depth 0 on the
real token and hidden state, depths 1..K-1 on mask tokens (a P-EAGLE chain anchored at t,
as speculators trains them), and j_t = how many of those K drafts are right before the
first wrong one. The walk then starts a round at t = 0, accepts j_t, and jumps to
t + j_t + 1, as vLLM does at temperature 0. No sampling, and no approximation for the later
drafts: speculators' per-depth accuracies are unconditional (its depth-d chains are sampled
whether or not depths 0..d-1 were right), and their ratios a_d / a_{d-1} overstate what
vLLM accepts after a right first draft (measured on the tiny target: 0.30 against 0.12).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

# At most this many validation rows go through the pass, and at most about this many
# drafted positions go through one forward (the attention mask is that size squared): a
# row of n positions is one forward when n * K fits, else a few.
MAX_ROWS = 512
MAX_SAMPLED = 4096
REPORT_FILE = "peagle-training-report.json"  # as peagle_train.py's
BASIS = (
    "per draft round at temperature 0, K={k}: the trained head drafted K tokens from each of "
    "{positions} validation positions ({rows} rows; speculators' own forward, a P-EAGLE "
    "chain per position), then vLLM's rounds were walked over them (a round starting at t "
    "that accepts j drafts is followed by one at t + j + 1)"
)


def round_start_walk(rows: list[list[int]], k: int) -> tuple[float, float, list[float], int]:
    """Walk vLLM's draft rounds over per-position accepted-draft counts, without sampling.

    rows: per validation row, j_t for each position t in order (t = 0 is the first draft
    after the prompt): how many of the K drafts of a round starting at t would be accepted
    (the leading right ones). A round starts at t = 0; one starting at t accepts j_t drafts
    and the next starts at t + j_t + 1. Returns, pooled over the rows' rounds (as vLLM pools
    over requests): the position-0 rate (rounds accepting at least one draft / rounds), the
    accepted length per round (1 + accepted drafts / rounds, vLLM's mean acceptance length),
    the per-position rates (rounds accepting at least d + 1 drafts / rounds, d < K), and the
    number of rounds.
    """
    per = [0] * k
    rounds = 0
    for row in rows:
        t = 0
        while t < len(row):
            j = max(0, min(row[t], k))
            rounds += 1
            for d in range(j):
                per[d] += 1
            t += j + 1
    if rounds == 0:
        return 0.0, 1.0, [0.0] * k, 0
    return per[0] / rounds, 1.0 + sum(per) / rounds, [x / rounds for x in per], rounds


def position0_stderr(rows: list[list[int]], k: int) -> float:
    """The standard error of the walk's position-0 rate over the rows it was made on: rows
    are the sampled unit (prompts differ far more than positions within one), so the ratio
    estimator's row-clustered SE, sqrt(m / (m - 1) * sum_i (h_i - r * n_i)^2) / sum_i n_i,
    with h_i and n_i row i's accepted first drafts and rounds, r the pooled rate, m rows."""
    per_row = [round_start_walk([row], k) for row in rows]
    hits = [p0 * n for p0, _, _, n in per_row]
    counts = [n for _, _, _, n in per_row]
    m, total = len(rows), sum(counts)
    if m < 2 or total == 0:
        return 0.0
    r = sum(hits) / total
    spread = sum((h - r * n) ** 2 for h, n in zip(hits, counts, strict=True))
    return (spread * m / (m - 1)) ** 0.5 / total


def leading_right(right: list[list[bool]], t: int, k: int) -> int:
    """j_t: how many drafts of the chain anchored at t are right before the first wrong one.
    right[d][t]: the depth-d draft of that chain is right (False where it does not exist)."""
    j = 0
    while j < k and right[j][t]:
        j += 1
    return j


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


def chains(seq_length: int, loss_mask: Any, k: int, anchors: Any) -> tuple[Any, Any]:
    """(anchor_pos, depth) for speculators' forward: depth 0 at every position (as its own
    sampler gives), then depths 1..K-1 of the chains anchored at `anchors` (loss-masked
    positions), each depth only where it stays inside the row and the loss mask."""
    import torch

    mask = loss_mask.reshape(-1).bool()
    device = mask.device
    anchors = anchors.to(device)
    pos = [torch.arange(seq_length, device=device)]
    dep = [torch.zeros(seq_length, dtype=torch.long, device=device)]
    for d in range(1, k):
        a = anchors[anchors + d < seq_length]
        a = a[mask[a + d]]
        pos.append(a)
        dep.append(torch.full((a.shape[0],), d, dtype=torch.long, device=device))
    return torch.cat(pos), torch.cat(dep)


def accepted_drafts(
    head_dir: Path,
    dataset: Path,
    train_ratio: float,
    total_seq_len: int,
    train_args: list[str],
    k: int,
    max_rows: int = MAX_ROWS,
) -> tuple[list[list[int]], list[list[int]]]:
    """Per validation row, j_t at each loss-masked position t (drafts a round starting there
    would accept), and c_t (its depth-0 draft right: speculators' own depth-0 count).

    Pinned to speculators 0.9.0's API: the validation split is its `ArrowDataset(split="val")`
    over the offline hidden states, each row goes through its `shift_batch`, and
    `PEagleDraftModel.forward` runs with num_depths=K on chains anchored at every masked
    position (its sampler, `generate_cod_sample_indices`, is replaced for the pass: it
    subsamples at random). The forward's logits and targets are taken where it hands them to
    `speculators.models.peagle.core.compute_metrics` (no public per-position hook exists);
    right = argmax(logits) == argmax(targets), as its `compute_accuracy_multi_step` counts."""
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
    # sees the patched module globals and skips a recompile.
    forward = PEagleDraftModel.forward
    forward = getattr(forward, "_torchdynamo_orig_callable", forward)
    seen: dict[str, Any] = {}
    chunk: dict[str, Any] = {}

    def capture(**kwargs: Any) -> tuple[Any, dict]:
        seen.update(kwargs)
        return torch.zeros((), device=device), {}

    def sample(seq_length: int, loss_mask: Any, num_depths: int, **_: Any) -> tuple[Any, Any]:
        return chains(seq_length, loss_mask, num_depths, chunk["anchors"])

    js: list[list[int]] = []
    cs: list[list[int]] = []
    saved = core.compute_metrics, core.generate_cod_sample_indices
    core.compute_metrics, core.generate_cod_sample_indices = capture, sample
    try:
        with torch.inference_mode():
            for i in range(min(len(rows), max_rows)):
                item = rows[i]
                if not isinstance(item, dict):
                    continue  # speculators' SampleUnavailable: validation skips it too
                b = shift_batch(item)
                n = int(b["input_ids"].shape[0])
                if n == 0:
                    continue
                batch = {
                    key: b[key][None].to(device)
                    for key in ("hidden_states", "input_ids", "position_ids", "loss_mask")
                }
                batch["verifier_last_hidden_states"] = b["verifier_last_hidden_states"][None].to(
                    device
                )
                batch["document_ids"] = torch.zeros_like(batch["input_ids"])  # one row
                masked = torch.nonzero(b["loss_mask"].reshape(-1) == 1).reshape(-1)
                right = torch.zeros((k, n), dtype=torch.bool)
                step = max(256, (MAX_SAMPLED - n) // max(1, k - 1))
                for start in range(0, max(1, masked.shape[0]), step):
                    chunk["anchors"] = masked[start : start + step]
                    seen.clear()
                    with torch.autocast(device.type, dtype=torch.bfloat16):
                        forward(head, **batch, num_depths=k, loss_config=None)
                    ok = seen["logits"][0].argmax(-1) == seen["targets"][0].argmax(-1)
                    right[seen["depth"].cpu(), seen["anchor_pos"].cpu()] = ok.cpu()
                table = right.tolist()
                ts = masked.tolist()
                js.append([leading_right(table, t, k) for t in ts])
                cs.append([int(table[0][t]) for t in ts])
    finally:
        core.compute_metrics, core.generate_cod_sample_indices = saved
    return js, cs


def estimate(
    head_dir: Path,
    dataset: Path,
    report: dict[str, Any],
    train_ratio: float,
    total_seq_len: int,
    train_args: list[str],
) -> dict[str, Any]:
    """The report's round-start keys: the served position-0 rate, accepted length and
    per-position rates per round to expect, and what they are."""
    t0 = time.monotonic()
    k = int(report["k"])
    js, cs = accepted_drafts(head_dir, dataset, train_ratio, total_seq_len, train_args, k)
    pos0, length, per_position, _ = round_start_walk(js, k)
    positions = sum(len(r) for r in cs)
    token_rate = sum(sum(r) for r in cs) / positions if positions else 0.0
    print(
        f"peagle-train: round-start estimate over {len(cs)} validation rows in "
        f"{time.monotonic() - t0:.1f} s: position-0 {pos0:.3f} per round "
        f"({token_rate:.3f} per token), accepted length {length:.3f}",
        flush=True,
    )
    return {
        "expected_position0_acceptance": round(pos0, 6),
        "expected_accepted_length": round(length, 6),
        "expected_per_position_acceptance": [round(x, 6) for x in per_position],
        "expected_position0_stderr": round(position0_stderr(js, k), 6),
        "eval_position0_accuracy": round(token_rate, 6),
        "round_start_basis": BASIS.format(k=k, positions=positions, rows=len(cs)),
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
