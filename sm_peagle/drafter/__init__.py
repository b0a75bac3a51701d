"""Inspect, check and push P-EAGLE / EAGLE-3 drafter heads (boto3 is imported lazily)."""

from sm_peagle.drafter.check import MODES, check_drafter
from sm_peagle.drafter.inspect import DrafterInspection, FileEntry, Problem, inspect_drafter
from sm_peagle.drafter.push import MANIFEST, PushResult, make_push_client, push_drafter
from sm_peagle.drafter.safetensors_header import (
    ByteCounter,
    HeaderError,
    SafetensorsHeader,
    read_local_header,
    read_s3_header,
)

__all__ = [
    "MANIFEST",
    "MODES",
    "ByteCounter",
    "DrafterInspection",
    "FileEntry",
    "HeaderError",
    "Problem",
    "PushResult",
    "SafetensorsHeader",
    "check_drafter",
    "inspect_drafter",
    "make_push_client",
    "push_drafter",
    "read_local_header",
    "read_s3_header",
]
