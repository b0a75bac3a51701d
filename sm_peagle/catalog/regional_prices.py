"""An instance's price in one region, and where it comes from (pure: no AWS call).

Prices differ by region, and peagle's catalog holds figures for one region only
(`InstanceType.price_region`). For any other region the price is unknown, saying why, and
never another region's figure unlabelled (issue 33, item 4). `peagle plan`, `status` and
`instances --region` use this; live prices are `pricing.with_live_prices`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .instances import InstanceType

__all__ = ["RegionalPrice", "price_in", "for_region"]


@dataclass(frozen=True)
class RegionalPrice:
    """An on-demand $/h for one instance in one region, and where it comes from; or, when
    `usd_per_hour` is None, why peagle does not know it (`note`)."""

    usd_per_hour: float | None
    region: str
    source: str | None = None
    note: str | None = None

    @property
    def label(self) -> str:
        """`$4.20/h on-demand (us-east-1, AWS blog)` or `unknown in eu-west-1 (why)`."""
        if self.usd_per_hour is None:
            return f"unknown in {self.region} ({self.note})" if self.note else "unknown"
        source = self.source or "source unknown"
        where = source if self.region in source else f"{self.region}, {source}"
        return f"${self.usd_per_hour:.2f}/h on-demand ({where})"


def price_in(inst: InstanceType, region: str, count: int = 1) -> RegionalPrice:
    """`count` x `inst`'s price in `region`: the catalog's (or live) figure when it was
    published for that region; otherwise unknown, saying which region peagle has a price
    for and the command that asks AWS for this one."""
    if inst.usd_per_hour is not None and inst.price_region == region:
        return RegionalPrice(inst.usd_per_hour * count, region, inst.price_source)
    if inst.usd_per_hour is not None:
        why = (
            f"peagle's price for {inst.name} is for {inst.price_region}; "
            f"`peagle instances --live-prices --region {region}` asks AWS"
        )
    else:
        why = (
            f"peagle has no price for {inst.name}; "
            f"`peagle instances --live-prices --region {region}` asks AWS"
        )
    return RegionalPrice(None, region, None, why)


def for_region(items: list[InstanceType], region: str) -> list[InstanceType]:
    """`items` priced for `region`: a catalog price published for another region becomes
    unknown, with `price_note` saying why (the table shows "unknown", not that figure)."""
    out = []
    for inst in items:
        price = price_in(inst, region)
        if price.usd_per_hour is None and inst.usd_per_hour is not None:
            inst = replace(
                inst, usd_per_hour=None, price_source=None, price_region=None, price_note=price.note
            )
        out.append(inst)
    return out
