"""The reads behind an endpoint's spend estimate (`status`, `ls`): its config's variants and
their catalog prices, and their instance-count history from Application Auto Scaling's
DescribeScalingActivities. The arithmetic is `planning/spend.py`; times are AWS's (the
endpoint's CreationTime and the `Date` of AWS's answers), never this machine's clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..catalog.instances import get_instance
from ..catalog.regional_prices import price_in
from ..planning.plan_result import variant_instance_types
from ..planning.spend import Fleet, SpendEstimate, desired_count, estimate

__all__ = ["DIMENSION", "History", "endpoint_spend", "fleets_of", "scaling_history"]

DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def resource_id(endpoint: str, variant: str) -> str:
    """Application Auto Scaling's ResourceId of a SageMaker variant."""
    return f"endpoint/{endpoint}/variant/{variant}"


class History:
    """Successful DescribeScalingActivities activities on variants' instance counts:
    ResourceId -> [(when, count)], and why the history is unknown (`problem`, e.g. the
    call was denied) or which variants had an activity whose count was unreadable."""

    def __init__(self) -> None:
        self.changes: dict[str, list[tuple[datetime, int]]] = {}
        self.unreadable: set[str] = set()
        self.problem: str | None = None


def scaling_history(aas: Any, resource: str | None = None) -> History:
    """Every Successful activity on `sagemaker:variant:DesiredInstanceCount` (of `resource`
    only, or of every variant in the region: one paginated call for a whole listing), its
    time the activity's EndTime (StartTime when it has none). A caller who may not read
    them (or a server without the call) gets the estimate from the config's count, noted."""
    from botocore.exceptions import BotoCoreError, ClientError

    history = History()
    if aas is None:
        history.problem = "no Application Auto Scaling client"
        return history
    kw: dict[str, Any] = {"ServiceNamespace": "sagemaker"}
    if resource is not None:
        kw.update(ResourceId=resource, ScalableDimension=DIMENSION)
    try:
        pages = aas.get_paginator("describe_scaling_activities").paginate(**kw)
        for page in pages:
            for a in page.get("ScalingActivities", []):
                if a.get("ScalableDimension") != DIMENSION or a.get("StatusCode") != "Successful":
                    continue
                count = desired_count(a.get("Description"))
                if count is None:
                    history.unreadable.add(a["ResourceId"])
                    continue
                at = a.get("EndTime") or a["StartTime"]
                history.changes.setdefault(a["ResourceId"], []).append((at, count))
    except (ClientError, BotoCoreError, NotImplementedError) as e:
        # NotImplementedError: stock moto in process (`mock_aws`) lacks the call; a
        # "CI with moto" user's `status` and `ls` still work, the estimate noted.
        code = getattr(e, "response", {}).get("Error", {}).get("Code") or type(e).__name__
        history.problem = f"scaling history not read ({code})"
    return history


def fleets_of(sm: Any, endpoint: dict[str, Any], history: History) -> tuple[list[Fleet], list[str]]:
    """The billed fleets of a described endpoint (one per production variant of its current
    config) and notes on what the history lacks. A config that cannot be read gives none
    (the estimate is then unknown)."""
    from botocore.exceptions import ClientError

    from .resources import not_found

    try:
        cfg = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    except ClientError as e:
        if not not_found(e):
            raise
        return [], [f"its endpoint config {endpoint['EndpointConfigName']} is missing"]
    region = sm.meta.region_name
    live = {v["VariantName"]: v for v in endpoint.get("ProductionVariants") or []}
    fleets, notes = [], []
    for v in cfg.get("ProductionVariants", []):
        name = v["VariantName"]
        types = variant_instance_types(v)
        lv = live.get(name, {})
        initial = v.get("InitialInstanceCount") or 0
        current = lv.get("CurrentInstanceCount", initial) or 0
        rid = resource_id(endpoint["EndpointName"], name)
        price, why = None, None
        if len(types) == 1:
            inst = get_instance(types[0])
            if inst is None:
                why = f"peagle has no price for {types[0]}"
            else:
                p = price_in(inst, region, 1)
                price, why = p.usd_per_hour, p.note
        elif types:
            why = "instances of several types (instance pools): which run is not known"
        else:
            why = "no instance type (serverless)"
        if rid in history.unreadable:
            notes.append(f"{name}: a scaling activity did not say its count")
        fleets.append(
            Fleet(
                variant=name,
                instance_type=types[0] if len(types) == 1 else ", ".join(types) or None,
                usd_per_hour=price,
                initial_count=initial,
                current_count=current,
                changes=history.changes.get(rid, []),
                price_note=why,
                # Inference components: no ModelName on the variant; SageMaker's managed
                # instance scaling moves its count without Application Auto Scaling.
                current_for_uptime=not v.get("ModelName"),
            )
        )
    if history.problem and any(not f.current_for_uptime for f in fleets):
        notes.append(f"{history.problem}: counted at the config's initial instance count")
    return fleets, notes


def endpoint_spend(
    sm: Any,
    endpoint: dict[str, Any],
    now: datetime,
    history: History,
    expires_in_s: float | None = None,
) -> SpendEstimate:
    """The spend estimate of a described endpoint (DescribeEndpoint's answer) at `now` (AWS's
    clock): its config's fleets priced from the catalog for the endpoint's region, and the
    count history in `history`; projected no further than its expiry (`expires_in_s`)."""
    if endpoint.get("EndpointStatus") == "Failed":
        # Its instances ran from creation until it failed, a time SageMaker does not
        # report (LastModifiedTime moves for other reasons too): no figure beats a wrong one.
        return SpendEstimate(
            None, None, "unknown: the endpoint Failed, and when its instances stopped is not known"
        )
    fleets, notes = fleets_of(sm, endpoint, history)
    est = estimate(endpoint["CreationTime"], now, fleets, expires_in_s)
    if notes and est.spend_usd is not None:
        return SpendEstimate(est.spend_usd, est.projected_30d_usd, "; ".join([est.note, *notes]))
    if not fleets and notes:
        return SpendEstimate(None, None, "unknown: " + "; ".join(notes))
    return est
