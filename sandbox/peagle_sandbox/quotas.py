"""Service Quotas for the sandbox account (moto 5.2 does not implement ListServiceQuotas).

Without this, preflight's quota check gets an HTTP 500 that boto3 retries with backoff for
~35 s. The sandbox answers ``ListServiceQuotas`` / ``GetServiceQuota`` for ServiceCode
``sagemaker`` with one "<instance type> for endpoint usage" quota per instance type botocore
knows, each ``ENDPOINT_QUOTA`` instances; other services get an empty list. Values are
SIMULATED: real accounts often start at 0 for GPU types.

Per region, the sandbox can host only some instance types, as AWS regions do: set
``PEAGLE_SANDBOX_INSTANCE_TYPES="us-west-2=ml.g6e.xlarge,ml.g6e.2xlarge;eu-west-1=..."``
(or the server's ``--instance-types REGION=TYPE,...``) and that region lists endpoint quotas
for those types only, which is how peagle's preflight learns a type is not offered there.
A region not named offers every type botocore knows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from peagle_sandbox.testing.moto_sagemaker import valid_instance_types

__all__ = [
    "ENDPOINT_QUOTA",
    "INSTANCE_TYPES_ENV",
    "configure",
    "handles",
    "handle",
    "offered_types",
    "parse_region_types",
]

ENDPOINT_QUOTA = 4
INSTANCE_TYPES_ENV = "PEAGLE_SANDBOX_INSTANCE_TYPES"
_REGION_TYPES: dict[str, frozenset[str]] = {}


def parse_region_types(text: str) -> dict[str, frozenset[str]]:
    """`"r1=t1,t2;r2=t3"` -> {r1: {t1, t2}, r2: {t3}}; ValueError naming what is wrong."""
    out: dict[str, frozenset[str]] = {}
    known = valid_instance_types()
    for part in filter(None, (p.strip() for p in text.split(";"))):
        region, sep, types = part.partition("=")
        names = frozenset(filter(None, (t.strip() for t in types.split(","))))
        if not sep or not region.strip() or not names:
            raise ValueError(f"{part!r} is not REGION=TYPE[,TYPE...]")
        bad = sorted(names - known)
        if bad:
            raise ValueError(f"{', '.join(bad)}: not a SageMaker instance type")
        out[region.strip()] = names
    return out


def configure(region_types: Mapping[str, frozenset[str]]) -> None:
    """The instance types each named region offers (the rest offer every type)."""
    _REGION_TYPES.clear()
    _REGION_TYPES.update(region_types)


def offered_types(region: str) -> frozenset[str]:
    """The instance types the sandbox hosts in `region`."""
    return _REGION_TYPES.get(region, valid_instance_types())


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
        [_quota(t, account, region) for t in sorted(offered_types(region))]
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
