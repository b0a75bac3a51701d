"""Application Auto Scaling for the moto harness: DescribeScalingActivities (moto 5.2.5 has
none: NotImplementedError, an HTTP 500 behind the server) and AAS on the sandbox clock.

Activities are what the harness records (`harness.record_scaling`: a test, or later the
sandbox's own simulated scaling), each stamped from the harness clock. Their shape is the
model's `ScalingActivity` (botocore 1.44.8): ActivityId, ServiceNamespace, ResourceId,
ScalableDimension, Description, Cause, StartTime, EndTime, StatusCode, StatusMessage.
[INF] the wording SageMaker's activities carry: Description "Setting desired instance
count to N." (AWS's "Query scaling history" page, whose stored copy is cut before its
example output), Cause "monitor alarm ... triggered policy ..." for a policy's activity;
the harness records "manual: peagle sandbox harness" as the cause (it has no alarm).
DescribeScalingActivities answers newest first (AWS: activities "from the previous six
weeks"; the order is not documented [INF]), filtered by ServiceNamespace, ResourceId and
ScalableDimension, paged by MaxResults (model: at most 50) / NextToken.

moto stamps scalable targets, policies and scheduled actions with `time.time()`; the
harness replaces that module's `time` with the sandbox clock, so CreationTime in
DescribeScalableTargets is the clock's too.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import moto.applicationautoscaling.models as aas_models
from moto.applicationautoscaling.exceptions import AWSValidationException
from moto.applicationautoscaling.responses import ApplicationAutoScalingResponse
from moto.sagemaker.models import sagemaker_backends

from peagle_sandbox.testing.moto_validate import problems, validation_message

__all__ = ["DIMENSION", "ScalingActivities", "scaling_patches"]

DIMENSION = "sagemaker:variant:DesiredInstanceCount"


class ScalingActivities:
    """Every scaling activity recorded, per account and region."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def record(
        self,
        account: str,
        region: str,
        endpoint: str,
        variant: str,
        desired: int,
        at: float,
        *,
        status: str = "Successful",
        end: float | None = None,
    ) -> dict[str, Any]:
        """An activity setting the variant's desired instance count to `desired`, started at
        `at` (epoch seconds) and ended at `end` (default: `at`, for a Successful one).
        A Successful activity also sets the endpoint's Desired/CurrentInstanceCount."""
        item: dict[str, Any] = {
            "ActivityId": str(uuid.uuid4()),
            "ServiceNamespace": "sagemaker",
            "ResourceId": f"endpoint/{endpoint}/variant/{variant}",
            "ScalableDimension": DIMENSION,
            "Description": f"Setting desired instance count to {desired}.",
            "Cause": "manual: peagle sandbox harness",
            "StartTime": at,
            "StatusCode": status,
            "StatusMessage": f"Successfully set desired instance count to {desired}. "
            "Change successfully fulfilled by sagemaker."
            if status == "Successful"
            else "",
        }
        if status in ("Successful", "Failed", "Overridden", "Unfulfilled"):
            item["EndTime"] = at if end is None else end
        with self._lock:
            self._items[(account, region)].append(item)
        if status == "Successful":
            _set_count(account, region, endpoint, variant, desired)
        return item

    def describe(self, account: str, region: str, params: dict[str, Any]) -> dict[str, Any]:
        """DescribeScalingActivities' answer: newest first, filtered, paged."""
        with self._lock:
            items = list(self._items.get((account, region), []))
        out = [
            i
            for i in reversed(items)
            if i["ServiceNamespace"] == params["ServiceNamespace"]
            and params.get("ResourceId") in (None, i["ResourceId"])
            and params.get("ScalableDimension") in (None, i["ScalableDimension"])
        ]
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults") or 50)
        page = out[start : start + size]
        answer: dict[str, Any] = {"ScalingActivities": page}
        if start + size < len(out):
            answer["NextToken"] = str(start + size)
        return answer


def _set_count(account: str, region: str, endpoint: str, variant: str, desired: int) -> None:
    found = sagemaker_backends[account][region].endpoints.get(endpoint)
    for v in getattr(found, "production_variants", None) or []:
        if v.get("VariantName") == variant:
            v["CurrentInstanceCount"] = v["DesiredInstanceCount"] = desired


def scaling_patches(
    activities: Callable[[], ScalingActivities], now: Callable[[], float]
) -> list[tuple[Any, str, Any]]:
    """DescribeScalingActivities on the response class; moto's AAS `time` on the clock."""

    def describe_scaling_activities(self: ApplicationAutoScalingResponse) -> str:
        params = json.loads(self.body) if self.body else {}
        found = problems("application-autoscaling", "DescribeScalingActivities", params)
        if found:
            raise AWSValidationException(validation_message(found))
        answer = activities().describe(self.current_account, self.region, params)
        return json.dumps(answer)

    describe_scaling_activities.__doc__ = "DescribeScalingActivities (peagle_sandbox)."
    clock_time = SimpleNamespace(time=now)
    return [
        (
            ApplicationAutoScalingResponse,
            "describe_scaling_activities",
            describe_scaling_activities,
        ),
        (aas_models, "time", clock_time),
    ]
