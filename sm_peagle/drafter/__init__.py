"""Inspect, check and push P-EAGLE / EAGLE-3 drafter heads.

Names are imported lazily: importing `sm_peagle.drafter.check` (the plan does, for a
local head) must not load `push` or the S3 reader, which reach boto3.
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
    "MANIFEST": "push",
    "PushResult": "push",
    "make_push_client": "push",
    "push_drafter": "push",
    "ByteCounter": "safetensors_header",
    "HeaderError": "safetensors_header",
    "SafetensorsHeader": "safetensors_header",
    "read_local_header": "safetensors_header",
    "read_s3_header": "safetensors_header",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
