"""JumpStart specs fetched live from `jumpstart-cache-prod-<region>`, and the disk cache.

The live half of `sm_peagle.catalog.jumpstart` (which only reads a spec document):
`fetch_spec` reads the manifest and the newest spec with the caller's S3 client and
caches both with a TTL; `find_hub_model_ids` searches SageMaker's public hub. Used by
`lifecycle.resolve` before the pure `plan()`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .. import settings
from ..catalog.jumpstart import public_bucket
from ..errors import Call, SpecError, text

__all__ = ["fetch_spec", "find_hub_model_ids", "read_cached_spec", "DEFAULT_TTL_SECONDS"]

DEFAULT_TTL_SECONDS = 24 * 3600
PUBLIC_HUB = "SageMakerPublicHub"


def _cache_path(region: str, key: str) -> Path:
    return settings.cache_dir() / "jumpstart" / region / key.replace("/", "__")


def _cached(path: Path, ttl: float) -> Any | None:
    try:
        if time.time() - path.stat().st_mtime <= ttl:
            return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return None


def _store(path: Path, data: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)  # atomic: a concurrent reader never sees half a file
    except OSError:
        pass  # a read-only cache only costs a re-fetch


def read_cached_spec(model_id: str, region: str, ttl: float = DEFAULT_TTL_SECONDS) -> dict | None:
    """The newest cached spec for `model_id`, if a fetch within `ttl` stored one."""
    return _cached(_cache_path(region, f"latest-{model_id}.json"), ttl)


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in v.split("."))


def fetch_spec(
    model_id: str,
    region: str,
    *,
    s3_client: Any,
    ttl: float = DEFAULT_TTL_SECONDS,
    refresh: bool = False,
) -> dict:
    """Fetch the newest spec of `model_id` from JumpStart's regional bucket (cached)."""
    bucket = public_bucket(region)
    manifest_path = _cache_path(region, "models_manifest.json")
    manifest = None if refresh else _cached(manifest_path, ttl)
    if manifest is None:
        body = s3_client.get_object(Bucket=bucket, Key="models_manifest.json")["Body"].read()
        manifest = json.loads(body)
        _store(manifest_path, manifest)
    entries = [m for m in manifest if m.get("model_id") == model_id]
    if not entries:
        raise SpecError(
            f"model: {model_id!r} is not in JumpStart's manifest for {region}",
            remedy=text(
                "check the id with `{models}` or the JumpStart catalog", models=Call("models")
            ),
            field="model",
            value=model_id,
        )
    newest = max(entries, key=lambda m: _version_key(m.get("version", "0")))
    spec_path = _cache_path(region, newest["spec_key"])
    spec = None if refresh else _cached(spec_path, ttl)
    if spec is None:
        spec = json.loads(
            s3_client.get_object(Bucket=bucket, Key=newest["spec_key"])["Body"].read()
        )
        _store(spec_path, spec)
    _store(_cache_path(region, f"latest-{model_id}.json"), spec)
    return spec


def find_hub_model_ids(sm_client: Any, keyword: str) -> list[str]:
    """JumpStart model ids in SageMaker's public hub whose name contains `keyword`."""
    names: list[str] = []
    kwargs: dict[str, Any] = {
        "HubName": PUBLIC_HUB,
        "HubContentType": "Model",
        "NameContains": keyword,
        "MaxResults": 100,
    }
    while True:
        page = sm_client.list_hub_contents(**kwargs)
        names += [s["HubContentName"] for s in page.get("HubContentSummaries", [])]
        if not page.get("NextToken"):
            return sorted(set(names))
        kwargs["NextToken"] = page["NextToken"]
