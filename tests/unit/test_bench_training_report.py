"""bench beside a trained head (issue 40, build item 4): the training report that
`drafter train` wrote beside the head (`<head>/peagle-training-report.json`) says what
position-0 acceptance to expect; bench puts the measured one beside it. Both are per draft
round (vLLM's `num_accepted_tokens_per_pos[0] / num_drafts`; the bench's per-request
`per_position[0]`: the share of rounds with a first draft accepted)."""

from __future__ import annotations

import io
import json
from typing import Any

from botocore.exceptions import ClientError

from sm_peagle.benchmarking.runner import drafter_training

HEAD = "s3://models/peagle/training/peagle-train-t-0123abcd/output/model"
REPORT = {
    "steps": 120,
    "k": 3,
    "per_depth_val_accuracy": [0.378, 0.11, 0.05],
    "expected_position0_acceptance": 0.231,
    "expected_accepted_length": 1.29,
    "expected_position0_stderr": 0.049,
}
LEVELS = [{"concurrency": 1, "acceptance": {"per_position": [0.296, 0.03, 0.02]}}]


class _S3:
    def __init__(self, objects: dict[tuple[str, str], bytes]) -> None:
        self.objects, self.asked = objects, []

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        self.asked.append((Bucket, Key))
        if (Bucket, Key) not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "no"}}, "GetObject")
        return {"Body": io.BytesIO(self.objects[(Bucket, Key)])}


class _Aws:
    def __init__(self, s3: _S3) -> None:
        self.s3 = s3

    def client(self, service: str, **_k: Any) -> Any:
        assert service == "s3"
        return self.s3


def _status(mode: str = "p-eagle", head: str | None = HEAD) -> dict[str, Any]:
    return {"mode": mode, "additional_data": {"eagle": head} if head else {}}


def test_a_trained_heads_expectation_stands_beside_the_measured_acceptance() -> None:
    key = "peagle/training/peagle-train-t-0123abcd/output/model/peagle-training-report.json"
    s3 = _S3({("models", key): json.dumps(REPORT).encode()})
    got = drafter_training(_Aws(s3), _status(), LEVELS)
    assert s3.asked == [("models", key)]  # one GET, beside the head
    assert got is not None
    assert (got["expected_position0_acceptance"], got["measured_position0_acceptance"]) == (
        0.231, 0.296
    )  # fmt: skip
    assert got["expected_per_round"] is True and got["k"] == 3
    assert got["note"] == (
        "the head's training report expects position-0 acceptance 23% (per draft round, "
        "K=3); measured 30% at concurrency 1"
    )


def test_a_head_without_a_report_or_no_drafter_adds_nothing() -> None:
    s3 = _S3({})
    assert drafter_training(_Aws(s3), _status(), LEVELS) is None  # JumpStart's head: no report
    assert drafter_training(_Aws(s3), _status(mode="baseline"), LEVELS) is None
    assert drafter_training(_Aws(s3), _status(head=None), LEVELS) is None
    assert len(s3.asked) == 1  # only the p-eagle endpoint with a head was read
