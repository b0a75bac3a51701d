"""Service Quotas for the sandbox account (moto 5.2 does not implement ListServiceQuotas).

Without this, preflight's quota check gets an HTTP 500 that boto3 retries with backoff for
~35 s. The sandbox answers ``ListServiceQuotas`` / ``GetServiceQuota`` for ServiceCode
``sagemaker`` with one "<instance type> for endpoint usage" quota per instance type botocore
knows, each ``ENDPOINT_QUOTA`` instances; other services get an empty list. Values are
SIMULATED: real accounts often start at 0 for GPU types.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from peagle_sandbox.testing.moto_sagemaker import valid_instance_types

__all__ = ["ENDPOINT_QUOTA", "handles", "handle"]

ENDPOINT_QUOTA = 4
_TARGET = "ServiceQuotasV20190624."
_ACTIONS = {"ListServiceQuotas", "GetServiceQuota"}


def handles(environ: dict[str, Any]) -> bool:
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    return target.startswith(_TARGET) and target[len(_TARGET) :] in _ACTIONS


def _quota(instance_type: str, account: str, region: str) -> dict[str, Any]:
    code = "L-" + hashlib.sha256(instance_type.encode()).hexdigest()[:8].upper()
    return {
        "ServiceCode": "sagemaker",
        "ServiceName": "Amazon SageMaker",
        "QuotaArn": f"arn:aws:servicequotas:{region}:{account}:sagemaker/{code}",
        "QuotaCode": code,
        "QuotaName": f"{instance_type} for endpoint usage",
        "Value": float(ENDPOINT_QUOTA),
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
        "Description": "SIMULATED by the peagle sandbox",
    }


def handle(environ: dict[str, Any], account: str, region: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) for one Service Quotas call."""
    action = environ["HTTP_X_AMZ_TARGET"][len(_TARGET) :]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    params = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
    quotas = (
        [_quota(t, account, region) for t in sorted(valid_instance_types())]
        if params.get("ServiceCode") == "sagemaker"
        else []
    )
    if action == "GetServiceQuota":
        found = [q for q in quotas if q["QuotaCode"] == params.get("QuotaCode")]
        if not found:
            return 400, {
                "__type": "NoSuchResourceException",
                "message": f"The request failed because the quota {params.get('QuotaCode')} "
                "does not exist.",
            }
        return 200, {"Quota": found[0]}
    start = int(params.get("NextToken") or 0)
    size = min(int(params.get("MaxResults") or 100), 100)
    page = quotas[start : start + size]
    body: dict[str, Any] = {"Quotas": page}
    if start + size < len(quotas):
        body["NextToken"] = str(start + size)
    return 200, body
