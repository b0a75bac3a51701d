"""The fit estimate, case by case, with every expected number worked out by hand from the
rule in planning/fit.py's docstring: usable = TP x GPU memory x utilization; fixed =
weights + drafter + TP x 2 GB overhead; KV of one sequence = 2 (K,V) x layers x KV heads x
head dim x 2 bytes (bf16) x max_model_len; fail when room = usable - fixed < one sequence;
warn ("tight") under 4 sequences."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sm_peagle.catalog.instances import INSTANCES, InstanceType
from sm_peagle.catalog.models import find_model as get_model
from sm_peagle.planning.steps.fit import check_fit, fit_budget

GB = 10**9
# A model shaped for round numbers: 2 x 10 layers x 5 KV heads x 100 dims x 2 bytes =
# 20,000 bytes per token; 100,000 tokens = 2 GB of KV for one max-length sequence.
MODEL = replace(
    get_model("gpt-oss-20b"),
    alias="round",
    num_layers=10,
    num_kv_heads=5,
    head_dim=100,
    weight_bytes=60 * GB,
)
LEN = 100_000
# Two 50 GB GPUs: usable at utilization 0.9 = 2 x 50 x 0.9 = 90 GB; at TP=1, 45 GB.
TWO = InstanceType("ml.test.2gpu", 2, "T", 50, 8, 64)


def fit(weights_gb: float, *, head_gb: float = 1, tp: int = 2, util: float = 0.9, **kw):
    model = replace(MODEL, weight_bytes=int(weights_gb * GB))
    return check_fit(
        model,
        kw.pop("inst", TWO),
        tp,
        drafter_bytes=int(head_gb * GB),
        speculative=kw.pop("speculative", True),
        max_model_len=kw.pop("max_model_len", LEN),
        gpu_memory_utilization=util,
    )


def test_budget_numbers_by_hand():
    b = fit_budget(
        MODEL,
        TWO,
        2,
        drafter_bytes=1 * GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert b.usable == pytest.approx(90 * GB)  # 2 x 50 x 0.9
    assert b.fixed == 60 * GB + 1 * GB + 2 * 2 * GB  # weights + head + 2 GPUs x 2 GB
    assert b.kv_one == 2 * GB and not b.kv_estimated
    assert b.room == pytest.approx(25 * GB) and b.sequences == 12  # 25 // 2


def test_kv_cache_alone_can_make_it_not_fit():
    # fixed = 83 + 1 + 4 = 88 GB of 90: the weights fit, the 2 GB sequence does not (2 GB
    # of room is enough; 1.5 GB is not).
    c = fit(83.5)
    assert c.status == "fail" and c.name == "endpoint.instance_type"
    assert "leaving 1.5 GB for a 100000-token KV cache that needs 2.0 GB" in c.message
    assert fit(83).status == "warn"  # room 2 GB = exactly one sequence


def test_per_gpu_overhead_counts_once_per_gpu():
    # 82 + 1 = 83 GB of 90: without the 2 x 2 GB overhead there would be 7 GB (3 sequences);
    # with it, 3 GB = one sequence and a tight fit. Weights 84.5: room 0.5 GB -> fail,
    # which an overhead of 0 (room 4.5 GB) or of one GPU (2.5 GB) would pass.
    assert fit(84.5).status == "fail"
    c = fit(82)
    assert c.status == "warn" and "~1 sequences" in c.message
    assert "overhead 4 GB vs 90 GB usable on 2x 50 GB" in c.message


def test_usable_memory_is_tp_times_one_gpu():
    # 40 GB of weights: at TP=2 room = 90 - 45 = 45 GB (22 sequences); at TP=1 usable is
    # 45 GB and the fixed part 40 + 1 + 2 = 43 GB leaves 2 GB: one sequence.
    ok = fit(40)
    assert ok.status == "pass" and "~22 x 100000 tokens" in ok.message
    assert "KV room 45 GB" in ok.message
    one = fit(40, tp=1)
    assert one.status == "warn" and "~1 sequences" in one.message


@pytest.mark.parametrize(
    ("weights_gb", "status", "message"),
    [
        (79.5, "warn", "~2 sequences"),  # room 90 - 84.5 = 5.5 GB -> 2 sequences
        (78, "warn", "~3 sequences"),  # room 7 GB -> 3: still tight
        (77, "pass", "~4 x 100000 tokens"),  # room 8 GB -> 4: the first that is not
    ],
)
def test_tight_fit_is_fewer_than_four_sequences(weights_gb, status, message):
    c = fit(weights_gb)
    assert (c.status, c.name) == (status, "fit") and message in c.message


def test_utilization_scales_usable_memory():
    # At 0.5: usable 50 GB; 40 + 1 + 4 = 45 -> room 5 GB -> 2 sequences (tight).
    c = fit(40, util=0.5)
    assert c.status == "warn" and "vs 50 GB usable" in c.message and "~2 sequences" in c.message


def test_baseline_carries_no_head_and_an_unknown_head_counts_4_gb():
    # 80 GB of weights: baseline room 90 - 84 = 6 GB -> 3 sequences; with a head of
    # unknown size (4 GB assumed) room 2 GB -> 1; with a known 1 GB head 5 GB -> 2.
    base = fit(80, speculative=False)
    assert "drafter 0.0 GB" in base.message and "~3 sequences" in base.message
    model = replace(MODEL, weight_bytes=80 * GB)
    unknown = check_fit(
        model,
        TWO,
        2,
        drafter_bytes=None,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert "drafter 4.0 GB" in unknown.message and "~1 sequences" in unknown.message


def test_unknown_shape_estimates_kv_as_a_tenth_of_the_weights():
    # No layer shape: one sequence is taken as 10% of the weights (6 GB of 60), labelled.
    model = replace(MODEL, num_layers=None)
    b = fit_budget(
        model,
        TWO,
        2,
        drafter_bytes=GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert b.kv_one == 6 * GB and b.kv_estimated and b.sequences == 4  # 25 // 6
    c = check_fit(
        model,
        TWO,
        2,
        drafter_bytes=GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert c.status == "pass" and c.message.endswith("(KV size estimated: model shape unknown)")


def test_unknown_size_is_a_warning_not_a_guess():
    c = check_fit(
        replace(MODEL, weight_bytes=None),
        TWO,
        2,
        drafter_bytes=GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert (c.name, c.status) == ("fit", "warn") and "size unknown" in c.message


def test_no_room_means_no_sequences():
    b = fit_budget(
        replace(MODEL, weight_bytes=100 * GB),
        TWO,
        2,
        drafter_bytes=GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert b.room < 0 and b.sequences == 0
    c = fit(100)
    assert "leaving 0.0 GB" in c.message  # negative room is shown as 0


def test_the_fix_names_the_smallest_catalog_type_that_holds_weights_head_and_one_sequence():
    # gpt-oss-120b: 65.3 GB weights + 3.6 GB head + 36 x 8 x 64 x 4 bytes x 8192 tokens
    # (0.604 GB) = 69.5 GB. One 96 GB g7e GPU gives 96 x 0.9 - 2 = 84.4 GB > 69.5; a 48 GB
    # L40S gives 41.2. The first 96 GB type in the catalog is ml.g7e.2xlarge.
    c = check_fit(
        get_model("gpt-oss-120b"),
        INSTANCES["ml.g6e.xlarge"],
        1,
        drafter_bytes=3_600_000_000,
        speculative=True,
        max_model_len=8192,
        gpu_memory_utilization=0.9,
    )
    assert c.status == "fail" and c.fix == "use a larger instance, e.g. ml.g7e.2xlarge"
    # 1500 GB of weights + 1 + 2: only 8 x 268 GB x 0.9 - 16 = 1913.6 GB holds it (p6-b300;
    # p6-b200 has 1272.8); 2000 GB fits no type.
    big = replace(MODEL, weight_bytes=1500 * GB)
    c = check_fit(
        big, TWO, 2, drafter_bytes=GB, speculative=True, max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )  # fmt: skip
    assert c.fix == "use a larger instance, e.g. ml.p6-b300.48xlarge"
    huge = replace(MODEL, weight_bytes=2000 * GB)
    c = check_fit(
        huge, TWO, 2, drafter_bytes=GB, speculative=True, max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )  # fmt: skip
    assert c.fix == "no catalog type fits"


def test_messages_in_full() -> None:
    # 60 + 1 + 2 x 2 = 65 GB of 90: room 25 GB, 12 sequences of 2 GB.
    c = fit(60)
    assert c.message == (
        "weights 60.0 GB + drafter 1.0 GB + overhead 4 GB vs 90 GB usable on 2x 50 GB; "
        "KV room 25 GB (~12 x 100000 tokens)"
    )
    assert c.fix is None
    unknown = check_fit(
        None,
        TWO,
        2,
        drafter_bytes=GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert unknown.message == "model size unknown to peagle; the fit is not checked"
    tight = fit(79.5)  # room 5.5 GB: 2 sequences
    assert tight.message.endswith("KV room for ~2 sequences of 100000 tokens")
    assert tight.fix is not None and tight.fix.startswith("use a larger instance, e.g. ")


@pytest.mark.parametrize(
    ("weights_gb", "smallest"),
    [
        # Failing on one 48 GB L40S (usable 48 x 0.9 - 2 = 41.2 GB). One 96 GB g7e GPU holds
        # 96 x 0.9 - 2 = 84.4 GB (exactly); the next catalog size that holds more is 192 GB
        # of GPU memory, first of which is ml.g7e.12xlarge.
        (81.4, "ml.g7e.12xlarge"),  # 81.4 + 1 head + 2 KV = 84.4: not strictly less
        (81.3, "ml.g7e.2xlarge"),  # 84.3 < 84.4
        (82.0, "ml.g7e.12xlarge"),  # 85 > 84.4; without the head or the KV it would fit
    ],
)
def test_the_suggested_type_holds_weights_head_and_one_sequence(weights_gb, smallest) -> None:
    c = fit(weights_gb, tp=1, inst=INSTANCES["ml.g6e.xlarge"])
    assert c.status == "fail"
    assert c.fix == f"use a larger instance, e.g. {smallest}"


def test_a_tight_fit_suggests_a_larger_type_with_room_for_four_sequences() -> None:
    # On ml.g7e.2xlarge (usable 84.4 GB) 78 GB of weights + 1 GB head leave 5.4 GB: two
    # 2 GB sequences. The type itself holds one sequence, so the old rule suggested the
    # type the plan already uses. Four sequences need 78 + 1 + 4 x 2 = 87 GB: the 96 GB
    # types cannot, the next size (192 GB) can: ml.g7e.12xlarge.
    c = fit(78.0, tp=1, inst=INSTANCES["ml.g7e.2xlarge"])
    assert c.status == "warn" and "~2 sequences" in c.message
    assert c.fix == "use a larger instance, e.g. ml.g7e.12xlarge"


def test_budget_of_a_model_of_unknown_size_counts_no_weights() -> None:
    b = fit_budget(
        replace(MODEL, weight_bytes=None),
        TWO,
        2,
        drafter_bytes=GB,
        speculative=True,
        max_model_len=LEN,
        gpu_memory_utilization=0.9,
    )
    assert b.fixed == GB + 4 * GB and b.kv_one == 2 * GB
