"""Inspect and check P-EAGLE / EAGLE-3 drafter heads: pure (no boto3, botocore or rich).

A head on S3 is read through the client the caller passes; the upload is a side effect
and lives in `sm_peagle.lifecycle.drafter_upload`. Names are imported lazily.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {
    "MODES": "check",
    "check_drafter": "check",
    "DrafterInspection": "inspection",
    "FileEntry": "inspection",
    "Problem": "inspection",
    "inspect_drafter": "inspect",
    "inspect_local": "readers",
    "ByteCounter": "safetensors_header",
    "HeaderError": "safetensors_header",
    "SafetensorsHeader": "safetensors_header",
    "read_local_header": "safetensors_header",
    "read_s3_header": "safetensors_header",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
