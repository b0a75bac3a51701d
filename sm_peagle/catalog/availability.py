"""Which SageMaker hosting instance types are offered in which region, as far as peagle
knows from sources it ships (`data/regional_availability.json`, each entry naming its
source and when it was read).

SageMaker publishes no table of instance types per region that a client can read, and the
types peagle deploys to are new, so the shipped data is small: a pair it does not list is
"availability unknown", never assumed either way. `peagle plan` reports what this module
says (pure: no network); `preflight` asks AWS itself (Service Quotas, see
`lifecycle/preflight.py`), which is the answer that counts.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Availability", "availability"]

_DATA = Path(__file__).parent / "data" / "regional_availability.json"


@dataclass(frozen=True)
class Availability:
    instance_type: str
    region: str
    status: Literal["offered", "not offered", "unknown"]
    source: str | None = None  # what the data file says about its source, and when read

    @property
    def line(self) -> str:
        """One line for the plan: what is known, and from where."""
        if self.status == "unknown":
            return (
                f"{self.instance_type} in {self.region}: availability unknown "
                "(not in peagle's regional data; preflight asks AWS)"
            )
        return f"{self.instance_type} {self.status} in {self.region} ({self.source})"


@functools.cache
def _data() -> dict:
    return json.loads(_DATA.read_text())


def _source(key: str) -> str:
    src = _data()["sources"].get(key) or {}
    return f"{key}, read {src.get('read', '?')}"


def availability(instance_type: str, region: str) -> Availability:
    """What peagle's shipped data says about `instance_type` in `region`."""
    doc = _data()
    for status, table in (("offered", doc["offered"]), ("not offered", doc["not_offered"])):
        key = (table.get(region) or {}).get(instance_type)
        if key:
            return Availability(instance_type, region, status, _source(key))  # type: ignore[arg-type]
    return Availability(instance_type, region, "unknown")
