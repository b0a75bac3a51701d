"""What really happened to each request, so clients' measurements can be checked against it.

A record per request: endpoint, request id (also sent as ``x-peagle-request-id``), the
endpoint config whose fleet served it (``config``, also sent as ``x-peagle-endpoint-config``:
during a guardrail deployment, the old or the new one), arrival time, one entry per engine
step (epoch time its last byte was handed to the socket, tokens, accepted/drafted draft
tokens), prompt/completion tokens and the true TTFT. Served as JSON by
``GET /_peagle/ground-truth`` and cleared by ``DELETE``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

__all__ = ["GroundTruth", "level_truth"]

MAX_RECORDS_PER_ENDPOINT = 5000


class GroundTruth:
    """Thread-safe store of request records, newest last, bounded per endpoint."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, deque[dict[str, Any]]] = {}

    def open(self, endpoint: str, request_id: str, **fields: Any) -> dict[str, Any]:
        record: dict[str, Any] = {
            "endpoint": endpoint,
            "request_id": request_id,
            "arrival": time.time(),
            "status": "running",
            "steps": [],
            "prompt_tokens": None,
            "completion_tokens": 0,
            "finish_reason": None,
            "ttft_s": None,
            "first_byte_s": None,
            "total_s": None,
            **fields,
        }
        with self._lock:
            self._records.setdefault(endpoint, deque(maxlen=MAX_RECORDS_PER_ENDPOINT)).append(
                record
            )
        return record

    def add_step(
        self,
        record: dict[str, Any],
        t: float,
        tokens: int | None,
        accepted: int | None = None,
        drafted: int | None = None,
    ) -> None:
        with self._lock:
            step = {
                "t": t,
                "t_rel": round(t - record["arrival"], 6),
                "tokens": tokens,
                "accepted": accepted,
                "drafted": drafted,
            }
            record["steps"].append(step)
            if tokens:
                record["completion_tokens"] += tokens
                if record["ttft_s"] is None:
                    record["ttft_s"] = step["t_rel"]

    def mark_first_byte(self, record: dict[str, Any], t: float) -> None:
        with self._lock:
            if record["first_byte_s"] is None:
                record["first_byte_s"] = round(t - record["arrival"], 6)

    def close(self, record: dict[str, Any], status: str = "ok", **fields: Any) -> bool:
        """End the record (`status`, `fields`); False if it had ended already (a record
        ends once, so whatever follows its end happens once)."""
        with self._lock:
            if record["status"] != "running":
                return False
            record.update(fields)
            record["status"] = status
            record["total_s"] = round(time.time() - record["arrival"], 6)
            return True

    def query(self, endpoint: str | None = None, request_id: str | None = None) -> list[dict]:
        with self._lock:
            groups = [self._records.get(endpoint, ())] if endpoint else self._records.values()
            out = [
                {**r, "steps": [dict(s) for s in r["steps"]]}
                for group in groups
                for r in group
                if request_id is None or r["request_id"] == request_id
            ]
        return sorted(out, key=lambda r: r["arrival"])

    def reset(self, endpoint: str | None = None) -> int:
        with self._lock:
            if endpoint is None:
                n = sum(len(g) for g in self._records.values())
                self._records.clear()
                return n
            return len(self._records.pop(endpoint, ()))


def level_truth(records: list[dict[str, Any]], truth: dict[str, dict]) -> dict[str, float]:
    """What a benchmark level should have measured, from the sandbox's own records.

    ``records`` are a level's per-request records (``request_id``, ``sent_at``), ``truth``
    the ground-truth records by request id. TTFT is first token step written minus the
    client's send time (one host clock); TPOT the time after the first step over the tokens
    after it; output tokens/s all tokens over (last step written - first request sent).
    """
    ttft, tpot, last = [], [], []
    tokens = steps = 0
    for r in records:
        g = truth[r["request_id"]]
        emitted = [s for s in g["steps"] if s["tokens"]]
        tokens += g["completion_tokens"]
        steps += len(emitted)
        ttft.append(emitted[0]["t"] - r["sent_at"])
        after_first = g["completion_tokens"] - emitted[0]["tokens"]
        if after_first > 0:
            tpot.append((emitted[-1]["t"] - emitted[0]["t"]) / after_first)
        last.append(emitted[-1]["t"])
    first_sent = min(r["sent_at"] for r in records)
    return {
        "output_tokens": tokens,
        "ttft": sum(ttft) / len(ttft),
        "tpot": sum(tpot) / len(tpot) if tpot else 0.0,
        "otps": tokens / (max(last) - first_sent),
        "tokens_per_chunk": tokens / steps,
    }
