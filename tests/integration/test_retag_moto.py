"""`retag` on moto: at every request boundary, the resource's tags decode to the old spec
or the new one, never to nothing or garbage; on the harness (its request log says in
which order SageMaker received them: AddTags, then DeleteTags) and on stock moto
(`mock_aws` alone, whose AddTags of an existing key appends a duplicate).
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from sm_peagle.lifecycle.retag import retag
from sm_peagle.lifecycle.spec_tags import decode_spec, encode_spec, tag_dict

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/r"


def spec(words: int, k: int) -> dict[str, Any]:
    return {
        "model": "gpt-oss-20b",
        "speculative": {"num_speculative_tokens": k},
        "tags": {f"t{i}": f"{(i * 2654435761) % 2**32:08x}{i}" for i in range(words)},
    }


def peagle_tags(data: dict[str, Any], version: str) -> dict[str, str]:
    return {"peagle:managed": "true", "peagle:version": version, **encode_spec(data)}


def a_model(old: dict[str, str]) -> str:
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_model(
        ModelName="m",
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1"},
        Tags=[{"Key": k, "Value": v} for k, v in {**old, "team": "ml"}.items()],
    )
    return sm.describe_model(ModelName="m")["ModelArn"]


def retag_watched(arn: str, wanted: dict[str, str]) -> list[dict[str, str]]:
    """Run retag with a client that, before its first request and after each, reads the
    tags through another client: what a process killed at that point leaves."""
    sm = boto3.client("sagemaker", region_name=REGION)
    reader = boto3.client("sagemaker", region_name=REGION)
    seen: list[dict[str, str]] = []

    def look(**_: Any) -> None:
        seen.append(tag_dict(reader.list_tags(ResourceArn=arn)["Tags"]))

    look()
    sm.meta.events.register("after-call.sagemaker.*", look)
    retag(sm, arn, wanted, lambda k: k.startswith("peagle:"))
    return seen


SIZES = [(8, 120), (120, 8), (120, 121)]


@pytest.mark.parametrize(("old_words", "new_words"), SIZES)
def test_on_the_harness_every_boundary_reads_the_old_or_the_new_spec(
    sagemaker_harness: Any, old_words: int, new_words: int
) -> None:
    old, new = spec(old_words, 3), spec(new_words, 7)
    arn = a_model(peagle_tags(old, "0.1"))
    wanted = peagle_tags(new, "0.2")
    sagemaker_harness.requests.clear()

    seen = retag_watched(arn, wanted)

    specs = [decode_spec(t) for t in seen]
    assert specs[0] == old and specs[-1] == new
    assert all(s in (old, new) for s in specs), specs
    assert seen[-1] == {**wanted, "team": "ml"}
    received = [r for r in sagemaker_harness.requests.all() if r.operation != "ListTags"]
    ops = [r.operation for r in received]
    stale = len(encode_spec(old)) > len(encode_spec(new))
    assert ops == (["AddTags", "DeleteTags"] if stale else ["AddTags"])
    if stale:
        gone = [f"peagle:spec:{i}" for i in range(len(encode_spec(new)), len(encode_spec(old)))]
        assert sorted(received[1].params["TagKeys"]) == sorted(gone)


@pytest.mark.parametrize(("old_words", "new_words"), SIZES)
def test_on_stock_moto_every_boundary_reads_the_old_or_the_new_spec(
    aws: None, old_words: int, new_words: int
) -> None:
    old, new = spec(old_words, 3), spec(new_words, 7)
    arn = a_model(peagle_tags(old, "0.1"))
    wanted = peagle_tags(new, "0.2")

    seen = retag_watched(arn, wanted)

    specs = [decode_spec(t) for t in seen]
    assert specs[0] == old and specs[-1] == new
    assert all(s in (old, new) for s in specs), specs
    assert seen[-1] == {**wanted, "team": "ml"}
