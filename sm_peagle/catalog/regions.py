"""Which AWS regions exist: one check for `--region`, the spec's `region` and AWS_REGION.

A region that matches the pattern but does not exist (`eu-west-9`) would otherwise fail
late and obscurely (a JumpStart image alias, a DNS error after retries). The list below is
botocore's, as shipped; a region newer than it is looked up in the `endpoints.json` of the
installed botocore, read as a file (botocore itself is never imported on the plan path).
"""

from __future__ import annotations

import functools
import json

__all__ = ["KNOWN_REGIONS", "region_problem"]

KNOWN_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
        "cn-north-1",
        "cn-northwest-1",
        "us-gov-east-1",
        "us-gov-west-1",
        "us-iso-east-1",
        "us-iso-west-1",
        "us-isob-east-1",
        "us-isob-west-1",
        "eu-isoe-west-1",
        "us-isof-east-1",
        "us-isof-south-1",
        "eusc-de-east-1",
        "",
    }
)


@functools.cache
def _botocore_regions() -> frozenset[str]:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("botocore")  # finds the package without importing it
    if spec is None or not spec.origin:
        return frozenset()
    try:
        doc = json.loads((Path(spec.origin).parent / "data" / "endpoints.json").read_text())
    except (OSError, ValueError):
        return frozenset()
    return frozenset(r for part in doc.get("partitions", []) for r in part.get("regions", {}))


def region_problem(region: str) -> str | None:
    """None if `region` is an AWS region; otherwise what is wrong with it, in one line."""
    if region in KNOWN_REGIONS or region in _botocore_regions():
        return None
    return f"{region!r} is not an AWS region (e.g. us-east-1)"
