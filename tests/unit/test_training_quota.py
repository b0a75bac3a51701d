"""`drafter train`'s preflight quota check: Service Quotas names training quotas
"<instance type> for training job usage" (one per type, often 0), distinct from the
"<instance type> for endpoint usage" ones deploy checks. One function reads both
(lifecycle/preflight.check_quota); these pin the training reading of it."""

from __future__ import annotations

from typing import Any

from sm_peagle.lifecycle.training import check_training_quota

TYPE = "ml.g6e.xlarge"


class FakeQuotas:
    def __init__(self, quotas: list[dict[str, Any]]) -> None:
        self.quotas = quotas

    def get_paginator(self, name: str) -> Any:
        assert name == "list_service_quotas"
        quotas = self.quotas

        class Pages:
            def paginate(self, **kw: Any) -> list[dict[str, Any]]:
                assert kw == {"ServiceCode": "sagemaker"}
                return [{"Quotas": quotas}]

        return Pages()


def _q(name: str, value: float, code: str = "L-1") -> dict[str, Any]:
    return {"QuotaName": name, "Value": value, "QuotaCode": code}


def test_a_zero_training_quota_fails_with_its_code() -> None:
    quotas = FakeQuotas([_q(f"{TYPE} for endpoint usage", 4, "L-E"),
                         _q(f"{TYPE} for training job usage", 0, "L-T")])  # fmt: skip
    c = check_training_quota(quotas, TYPE)
    assert c.status == "fail"
    assert f"'{TYPE} for training job usage' is 0, a training job needs 1" in c.message
    assert "L-T" in str(c.fix)


def test_the_endpoint_quota_does_not_count_for_training() -> None:
    c = check_training_quota(FakeQuotas([_q(f"{TYPE} for endpoint usage", 4)]), TYPE)
    assert c.status == "warn" and "not checked" in c.message


def test_a_training_quota_of_one_passes() -> None:
    c = check_training_quota(FakeQuotas([_q(f"{TYPE} for training job usage", 1)]), TYPE)
    assert c.status == "pass"
