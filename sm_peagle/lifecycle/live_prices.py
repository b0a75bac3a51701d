"""Live SageMaker hosting prices: the Price List API calls behind
`peagle instances --live-prices` (a side effect, so not in catalog/, whose
`catalog.pricing` reads the answers: usage types, hourly rates, the note on a kept price).
It was `sm_peagle.catalog.pricing.with_live_prices`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..catalog.instances import InstanceType
from ..catalog.pricing import (
    PRICING_REGION,
    REGION_CODES,
    SERVICE_CODE,
    hourly_usd,
    kept_price,
    usage_type,
)
from ..errors import PeagleError

__all__ = ["training_price", "with_live_prices"]


def _products(client: Any, usage: str) -> list[Any]:
    kwargs: dict[str, Any] = {
        "ServiceCode": SERVICE_CODE,
        "Filters": [{"Type": "TERM_MATCH", "Field": "usagetype", "Value": usage}],
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }
    out: list[Any] = []
    while True:
        page = client.get_products(**kwargs)
        out += page.get("PriceList", [])
        if not page.get("NextToken"):
            return out
        kwargs["NextToken"] = page["NextToken"]


def _describe(err: Exception) -> str:
    response = getattr(err, "response", None)
    if isinstance(response, dict) and "Error" in response:
        e = response["Error"]
        return f"live price lookup failed ({e.get('Code', '?')}: {e.get('Message', '')})".strip()
    return f"live price lookup failed ({err})"


def with_live_prices(items: list[InstanceType], region: str, aws: Any) -> list[InstanceType]:
    """`items` with `usd_per_hour` from the Price List API for `region` where AWS
    publishes exactly one on-demand hourly rate; otherwise unchanged plus a `price_note`.

    `aws` is an AwsContext (anything with `client(service, region=...)`). The first
    failed call (no credentials, AccessDenied, network) stops the lookups: the same
    failure would repeat for every type.
    """
    if region not in REGION_CODES:
        why = f"no Price List region code known to peagle for {region}"
        return [kept_price(i, why, region) for i in items]

    from botocore.exceptions import BotoCoreError, ClientError

    failure: str | None = None
    client: Any = None
    out: list[InstanceType] = []
    for inst in items:
        if failure is None and client is None:
            try:
                client = aws.client("pricing", region=PRICING_REGION)
            except (BotoCoreError, ClientError, PeagleError) as e:
                failure = _describe(e)
        if failure is not None:
            out.append(kept_price(inst, failure, region))
            continue
        usage = usage_type(region, inst.name)
        try:
            rates = hourly_usd(_products(client, usage))
        except (BotoCoreError, ClientError) as e:
            failure = _describe(e)
            out.append(kept_price(inst, failure, region))
            continue
        if len(rates) == 1:
            (usd,) = rates
            out.append(
                replace(
                    inst,
                    usd_per_hour=usd,
                    price_source=f"AWS Price List API, {usage}",
                    price_region=region,
                    price_note=None,
                )
            )
        elif not rates:
            out.append(kept_price(inst, f"AWS publishes no on-demand price for {usage}", region))
        else:
            listed = ", ".join(f"{r:g}" for r in sorted(rates))
            why = f"{len(rates)} different prices for {usage} ({listed})"
            out.append(kept_price(inst, why, region))
    return out


def training_price(region: str, instance_type: str, aws: Any) -> tuple[float | None, str]:
    """The on-demand hourly USD price of `instance_type` as a training instance in `region`
    (usage type `<code>-Train:<type>`), and where it came from or why it is unknown. Never
    a hosting price: SageMaker bills training separately. Any failure is unknown, not an
    error: a missing price must not stop a training job."""
    usage = usage_type(region, instance_type, component="Train")
    if usage is None:
        return None, f"no Price List region code known to peagle for {region}"
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        rates = hourly_usd(_products(aws.client("pricing", region=PRICING_REGION), usage))
    except (BotoCoreError, ClientError, PeagleError) as e:
        return None, _describe(e)
    if len(rates) == 1:
        (usd,) = rates
        return usd, f"AWS Price List API, {usage}"
    if not rates:
        return None, f"AWS publishes no on-demand price for {usage}"
    listed = ", ".join(f"{r:g}" for r in sorted(rates))
    return None, f"{len(rates)} different prices for {usage} ({listed})"
