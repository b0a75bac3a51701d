"""Talk to a deployed endpoint: request bodies, the SageMaker response stream, vLLM's
server-sent events, typed chunks and honest latency metrics.

Names are imported lazily so importing the package stays cheap (no boto3 until a call).
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {
    "RuntimeClient": "client",
    "StreamResult": "client",
    "AsyncStreamResult": "async_stream",
    "iter_payload_parts": "client",
    "StreamChunk": "chunks",
    "Completion": "chunks",
    "Usage": "chunks",
    "StreamParser": "chunks",
    "collect": "chunks",
    "SSEDecoder": "sse",
    "build_payload": "payloads",
    "encode_payload": "payloads",
    "MAX_PAYLOAD_BYTES": "payloads",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
