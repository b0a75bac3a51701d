"""Two plans mean the same deployment when they send the same requests (issue 33, item 3):
`update`, `apply` and `diff` decide "no change" by `same_meaning`, not by the spec hash.

The K used below is read from the first plan's own speculative config (what it sends),
not from peagle's defaults table."""

from __future__ import annotations

import sm_peagle
from sm_peagle.planning.meaning import same_meaning


def _k(p) -> int:
    return p.speculative_config["num_speculative_tokens"]


def test_an_explicit_default_is_the_same_deployment():
    implicit = sm_peagle.plan("gpt-oss-20b")
    explicit = sm_peagle.plan("gpt-oss-20b", k=_k(implicit))
    assert implicit.spec_sha256 != explicit.spec_sha256  # other names: the old test
    assert implicit.names["endpoint_config"] != explicit.names["endpoint_config"]
    assert same_meaning(implicit, explicit)


def test_every_resolved_value_spelled_out_is_the_same_deployment():
    implicit = sm_peagle.plan("gpt-oss-20b")
    variant = implicit.create_endpoint_config["ProductionVariants"][0]
    explicit = sm_peagle.plan(
        "gpt-oss-20b",
        k=_k(implicit),
        mode="p-eagle",
        instance_type=variant["InstanceType"],
        instance_count=variant["InitialInstanceCount"],
    )
    assert same_meaning(implicit, explicit)


def test_another_k_is_another_deployment():
    implicit = sm_peagle.plan("gpt-oss-20b")
    assert not same_meaning(implicit, sm_peagle.plan("gpt-oss-20b", k=_k(implicit) + 1))


def test_the_users_tags_are_part_of_the_meaning():
    """peagle's own tags are bookkeeping; the user's are sent and are a change."""
    base = {"model": "gpt-oss-20b", "tags": {"team": "a"}}
    a = sm_peagle.plan(base)
    assert same_meaning(
        a, sm_peagle.plan({**base, "speculative": {"num_speculative_tokens": _k(a)}})
    )
    assert not same_meaning(a, sm_peagle.plan({**base, "tags": {"team": "b"}}))


def test_a_component_left_at_the_default_k_and_given_it_are_the_same_deployment():
    common = {"instance_type": "ml.g7e.12xlarge", "accelerators_per_copy": 1}
    implicit = sm_peagle.plan("gpt-oss-20b", components=["p-eagle", "baseline"], **common)
    k = _k(implicit)
    explicit = sm_peagle.plan("gpt-oss-20b", components=[f"p-eagle:k={k}", "baseline"], **common)
    other = sm_peagle.plan("gpt-oss-20b", components=[f"p-eagle:k={k + 1}", "baseline"], **common)
    assert implicit.spec_sha256 != explicit.spec_sha256
    assert same_meaning(implicit, explicit)
    assert not same_meaning(implicit, other)
