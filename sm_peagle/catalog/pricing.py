"""On-demand SageMaker hosting prices from the AWS Price List API: the pure half.

`peagle instances --live-prices` replaces the catalog's prices with what AWS publishes
for the region (the calls are `sm_peagle.lifecycle.live_prices`; this module reads their
answers and never imports boto3 or botocore). The Price List API lives in us-east-1
whatever region is priced; a SageMaker real-time hosting product is keyed by its usage
type, `<REGION CODE>-Host:<type>` (e.g. `USE1-Host:ml.g6e.2xlarge`), and each PriceList
entry is a JSON string whose `terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD` is the
hourly rate.

Never invent a price: when the lookup fails (no credentials, AccessDenied, throttled,
offline), when the region code is not known, or when AWS publishes no single hourly
figure, the catalog price (possibly None = unknown) is kept and `price_note` says why.
The catalog's prices hold for their own region (`InstanceType.price_region`): for any
other region the price is unknown, never another region's figure unlabelled
(`regional_prices.price_in`, the pure half that plan uses).

Training instances (`drafter train`) are priced under their own usage type,
`<REGION CODE>-Train:<type>` (e.g. `USE1-Train:ml.g5.2xlarge`); the catalog holds none, so a
training price is the live figure or unknown.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from .instances import InstanceType

__all__ = [
    "REGION_CODES",
    "PRICING_REGION",
    "SERVICE_CODE",
    "hourly_usd",
    "kept_price",
    "usage_type",
]

PRICING_REGION = "us-east-1"  # the Price List API endpoint peagle calls
SERVICE_CODE = "AmazonSageMaker"

# AWS billing usage-type prefixes. Only regions whose code is certain are listed; any
# other region keeps catalog prices with a note instead of guessing a code.
REGION_CODES: dict[str, str] = {
    "us-east-1": "USE1",
    "us-east-2": "USE2",
    "us-west-1": "USW1",
    "us-west-2": "USW2",
    "eu-west-1": "EU",
    "eu-west-2": "EUW2",
    "eu-central-1": "EUC1",
    "ap-northeast-1": "APN1",
    "ap-southeast-1": "APS1",
    "ap-southeast-2": "APS2",
    "ap-south-1": "APS3",
    "ca-central-1": "CAN1",
}


def usage_type(region: str, instance_type: str, *, component: str = "Host") -> str | None:
    """`USE1-Host:ml.g7e.2xlarge` for real-time hosting (`component="Train"`:
    `USE1-Train:ml.g7e.2xlarge`, a training job's instance, billed separately), or None for
    an unknown region."""
    code = REGION_CODES.get(region)
    return f"{code}-{component}:{instance_type}" if code else None


def hourly_usd(price_list: list[Any]) -> set[float]:
    """Every distinct non-zero on-demand USD hourly rate in a get_products PriceList."""
    rates: set[float] = set()
    for item in price_list:
        try:
            doc = json.loads(item) if isinstance(item, str) else item
        except ValueError:
            continue
        on_demand = ((doc or {}).get("terms") or {}).get("OnDemand") or {}
        for term in on_demand.values():
            for dim in (term.get("priceDimensions") or {}).values():
                usd = (dim.get("pricePerUnit") or {}).get("USD")
                unit = str(dim.get("unit", "")).lower()
                if usd is None or not unit.startswith(("hr", "hour")):
                    continue
                try:
                    value = float(usd)
                except ValueError:
                    continue
                if value > 0:
                    rates.add(value)
    return rates


def kept_price(inst: InstanceType, why: str, region: str | None = None) -> InstanceType:
    """`inst` with a note on why its live price is missing; its catalog price only when
    that was published for `region` (None: the catalog's own region)."""
    if inst.usd_per_hour is not None and region in (None, inst.price_region):
        return replace(inst, price_note=f"catalog price kept: {why}")
    if inst.usd_per_hour is not None:  # another region's figure: unknown here, never kept
        why = f"{why}; the catalog's price is for {inst.price_region}"
    return replace(
        inst,
        usd_per_hour=None,
        price_source=None,
        price_region=None,
        price_note=f"price unknown: {why}",
    )
