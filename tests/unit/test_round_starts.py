"""The served acceptance estimate the training job writes (`round_starts.py`, beside the
entrypoint in the job's source dir): the walk of vLLM's draft rounds, a pure function.

The rule (vLLM 0.31 `spec_decode/metrics.py` `observe_draft`, and the scheduler's
`num_accepted = len(generated) - num_sampled`): each draft round counts one draft and, for
each accepted draft d, one accepted token at position d. At temperature 0 a round starting
at position t accepts its leading right drafts, j_t of them; it emits j_t + 1 tokens, so the
next round starts at t + j_t + 1. Position-0 acceptance = rounds with j >= 1 / rounds; mean
acceptance length = 1 + accepted drafts / rounds. Every expected value below is worked by
hand from that rule. The script runs where peagle is not installed, so it is loaded by path,
as the entrypoint is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "sm_peagle" / "training" / "source"


def _load() -> ModuleType:
    path = SOURCE / "round_starts.py"
    spec = importlib.util.spec_from_file_location("round_starts_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


rs = _load()


def test_k1_each_accepted_draft_skips_the_next_position() -> None:
    # j = [1, 1, 0, 1], K = 1: rounds start at 0 (accepts 1, next at 2), 2 (accepts 0, next
    # at 3), 3 (accepts 1). Position-0 2/3, though per token 3 of 4 are right; tokens per
    # round (2 + 1 + 2) / 3.
    pos0, length, per, rounds = rs.round_start_walk([[1, 1, 0, 1]], 1)
    assert (rounds, pos0, length) == (3, pytest.approx(2 / 3), pytest.approx(5 / 3))
    assert per == [pytest.approx(2 / 3)]


def test_k3_jumps_past_every_accepted_draft() -> None:
    # j = [3, 2, 0, 1, 0, 0, 2, 1], K = 3: rounds at 0 (3 accepted, next at 4), 4 (0, next
    # 5), 5 (0, next 6), 6 (2, next 9: the end). 4 rounds; position 0 accepted in 2, position
    # 1 in 2, position 2 in 1. The rounds never start at 1, 2, 3 or 7.
    pos0, length, per, rounds = rs.round_start_walk([[3, 2, 0, 1, 0, 0, 2, 1]], 3)
    assert rounds == 4
    assert per == [pytest.approx(2 / 4), pytest.approx(2 / 4), pytest.approx(1 / 4)]
    assert (pos0, length) == (pytest.approx(0.5), pytest.approx(1 + 5 / 4))


def test_clustered_right_drafts_are_skipped_so_the_round_rate_is_lower() -> None:
    # K = 3, right in one run then wrong: j = [3,3,2,1,0,0,0,0]. Rounds at 0 (next 4), 4, 5,
    # 6, 7: 1 of 5, though per token half the depth-0 drafts are right.
    pos0, length, _, rounds = rs.round_start_walk([[3, 3, 2, 1, 0, 0, 0, 0]], 3)
    assert (rounds, pos0, length) == (5, pytest.approx(1 / 5), pytest.approx(1 + 3 / 5))


def test_the_same_head_with_more_drafts_starts_fewer_rounds() -> None:
    # One row's chains, read at K = 1 and K = 3 (j capped at K): [2, 2, 0, 2].
    # K = 1: j = [1, 1, 0, 1] -> rounds at 0, 2, 3: 2 of 3. K = 3: rounds at 0 (2, next 3),
    # 3 (2): 2 of 2.
    assert rs.round_start_walk([[2, 2, 0, 2]], 1)[0] == pytest.approx(2 / 3)
    assert rs.round_start_walk([[2, 2, 0, 2]], 3)[:2] == (pytest.approx(1.0), pytest.approx(3.0))


def test_rows_are_pooled_by_round_not_averaged_per_row() -> None:
    # K = 1. Row [0, 0]: rounds at 0 and 1, none accepted. Row [1]: one round, accepted.
    # 1 of 3 rounds (a mean of per-row rates would give 1/2).
    pos0, length, _, rounds = rs.round_start_walk([[0, 0], [1]], 1)
    assert (rounds, pos0, length) == (3, pytest.approx(1 / 3), pytest.approx(4 / 3))


def test_no_positions_means_no_rounds() -> None:
    assert rs.round_start_walk([], 2) == (0.0, 1.0, [0.0, 0.0], 0)
    assert rs.round_start_walk([[]], 1) == (0.0, 1.0, [0.0], 0)


def test_the_stderr_is_over_rows_the_sampled_unit() -> None:
    # K = 1. Row A [1, 0]: rounds at 0 (accepted, next at 2): h = 1, n = 1. Row B [0, 0]:
    # rounds at 0, 1: h = 0, n = 2. r = 1/3; residuals 1 - 1/3 = 2/3 and 0 - 2/3 = -2/3;
    # sqrt(2 / 1 * (4/9 + 4/9)) / 3 = sqrt(16/9) / 3 = 4/9.
    assert rs.position0_stderr([[1, 0], [0, 0]], 1) == pytest.approx(4 / 9)
    # Rows that agree have none; one row has no spread to measure.
    assert rs.position0_stderr([[1, 0], [1, 0]], 1) == 0.0
    assert rs.position0_stderr([[1, 0, 1]], 1) == 0.0


def test_a_round_accepts_the_leading_right_drafts_only() -> None:
    # right[d][t]: chain at t = 0 is right, right, wrong -> 2; at t = 1 wrong first -> 0 (a
    # right depth 1 after a wrong depth 0 is never accepted); at t = 2 all right -> K = 3.
    right = [[True, False, True], [True, True, True], [False, True, True]]
    assert [rs.leading_right(right, t, 3) for t in range(3)] == [2, 0, 3]
    assert rs.leading_right(right, 2, 1) == 1


def test_the_pass_takes_the_backends_draft_attention_else_sdpa() -> None:
    assert rs.draft_attn_impl(["--draft-attn-impl=sdpa", "--loss-implementation=eager"]) == "sdpa"
    assert rs.draft_attn_impl(["--draft-attn-impl=eager"]) == "eager"
    assert rs.draft_attn_impl([]) == "sdpa"
