"""Keep the slice of botocore's service model that plans validate against on disk.

`planning/steps/aws_shapes.py` is pure and writes nothing; reading and slicing botocore's
`service-2.json.gz` costs more than the rest of `peagle plan`, so the impure layer installs
this loader, which keeps each slice in the cache directory (`settings.cache_dir()`, i.e.
PEAGLE_CACHE_DIR) under a name that changes with botocore's file and the operation list.
"""

from __future__ import annotations

import json

from .. import settings
from ..planning.steps import aws_shapes

__all__ = ["install"]


def cached_slice(service: str) -> dict:
    cache = settings.cache_dir() / "shapes" / aws_shapes.slice_key(service)
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    sliced = aws_shapes.slice_service(service)
    try:  # a cache that cannot be written only costs time
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(sliced))
        tmp.replace(cache)
    except OSError:
        pass
    return sliced


def install() -> None:
    """Plans read slices through the disk cache (a no-op once installed)."""
    aws_shapes.use_loader(cached_slice)
