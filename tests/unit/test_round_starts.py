"""The served position-0 estimate the training job writes (`round_starts.py`, beside the
entrypoint in the job's source dir): the walk of vLLM's draft rounds, a pure function.

The rule (vLLM 0.31 `spec_decode/metrics.py` `observe_draft` and the scheduler): each draft
round counts one draft and, for each accepted draft, one accepted token at its position; a
round starting at position t whose first draft is wrong emits the target's token and the next
round starts at t + 1; one that accepts j drafts emits j + 1 tokens and the next round starts
at t + j + 1. Given depth-0 correctness c_t and, after an accepted first draft, P(j) =
q_1...q_{j-1}(1 - q_j), the expected position-0 rate is sum s_t c_t / sum s_t over the
round-start probabilities s_t. Every expected value below is worked by hand from that rule.
The script runs where peagle is not installed, so it is loaded by path, as the entrypoint is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "sm_peagle" / "training" / "source"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "round_starts_under_test", SOURCE / "round_starts.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


rs = _load()


def test_k1_each_accepted_draft_skips_the_next_position() -> None:
    # c = [1, 1, 0, 1], K = 1: rounds start at 0 (right: 1 draft accepted, next at 2),
    # 2 (wrong: next at 3), 3 (right). Position-0 rate 2/3 (per token it is 3/4);
    # tokens per round (2 + 1 + 2) / 3.
    pos0, length, rounds = rs.round_start_walk([[1, 1, 0, 1]], [])
    assert pos0 == pytest.approx(2 / 3)
    assert length == pytest.approx(5 / 3)
    assert rounds == pytest.approx(3)


def test_k3_spreads_the_next_start_over_the_accepted_lengths() -> None:
    # q = [0.5, 0.5]: after a right first draft, j = 1, 2, 3 with P = 0.5, 0.25, 0.25
    # (E[j] = 1.75). s_0 = 1 (right) -> s_2 += 0.5, s_3 += 0.25, s_4 (past the end) += 0.25.
    # s_1 = 0. s_2 = 0.5 (wrong) -> s_3 += 0.5, so s_3 = 0.75 (right).
    # Position-0: (1 + 0 + 0.75) / (1 + 0.5 + 0.75) = 7/9.
    # Tokens per round: (1 * 2.75 + 0.5 * 1 + 0.75 * 2.75) / 2.25 = 85/36.
    pos0, length, rounds = rs.round_start_walk([[1, 1, 0, 1]], [0.5, 0.5])
    assert pos0 == pytest.approx(7 / 9)
    assert length == pytest.approx(85 / 36)
    assert rounds == pytest.approx(2.25)


def test_clustered_right_drafts_are_skipped_so_the_round_rate_is_lower() -> None:
    # K = 3 and every later draft accepted (q = 1): a right first draft jumps 4 positions.
    # c = [1,1,1,1,0,0,0,0]: rounds start at 0, 4, 5, 6, 7 -> 1/5, though per token 1/2.
    pos0, length, _ = rs.round_start_walk([[1, 1, 1, 1, 0, 0, 0, 0]], [1.0, 1.0])
    assert pos0 == pytest.approx(1 / 5)
    assert length == pytest.approx((4 + 1 + 1 + 1 + 1) / 5)


def test_rows_are_pooled_by_round_not_averaged_per_row() -> None:
    # K = 1. Row [0, 0]: starts 0, 1, both wrong. Row [1]: start 0, right. 1 of 3 rounds
    # (a mean of per-row rates would give 1/2); tokens (1 + 1 + 2) / 3.
    pos0, length, rounds = rs.round_start_walk([[0, 0], [1]], [])
    assert (pos0, rounds) == (pytest.approx(1 / 3), pytest.approx(3))
    assert length == pytest.approx(4 / 3)


def test_no_positions_means_no_rounds() -> None:
    assert rs.round_start_walk([], [0.5]) == (0.0, 1.0, 0.0)
    assert rs.round_start_walk([[]], []) == (0.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("per_depth", "k", "q"),
    [
        ([0.5, 0.25, 0.2], 3, [0.5, 0.8]),  # a_1 / a_0, a_2 / a_1
        ([0.4, 0.0, 0.1], 3, [0.0, 0.0]),  # a_(d-1) = 0: nothing past it is accepted
        ([0.2, 0.3], 2, [1.0]),  # sampling noise can put a_1 above a_0: capped at 1
        ([0.5], 3, [0.0, 0.0]),  # depths the report lacks count as never accepted
        ([0.5, 0.25], 1, []),  # K = 1 has no later drafts
    ],
)
def test_conditional_rates_are_ratios_of_speculators_unconditional_accuracies(
    per_depth: list[float], k: int, q: list[float]
) -> None:
    assert rs.conditional_rates(per_depth, k) == pytest.approx(q)


def test_the_pass_takes_the_backends_draft_attention_else_sdpa() -> None:
    assert rs.draft_attn_impl(["--draft-attn-impl=sdpa", "--loss-implementation=eager"]) == "sdpa"
    assert rs.draft_attn_impl(["--draft-attn-impl=eager"]) == "eager"
    assert rs.draft_attn_impl([]) == "sdpa"
