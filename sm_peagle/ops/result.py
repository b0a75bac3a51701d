"""The one shape of the SDK's results: a frozen dataclass read by attribute, with
`to_dict()` (the command's `--json` document).

Ten results used to be `dict`s (`EndpointStatus`, `BenchResult`, ...); `result["status"]`
still works for one release, with a FutureWarning naming the attribute (`KeyAccess`), so
notebooks written against the dicts keep running while they move to `result.status`.
`DocumentResult` reads a document whose keys vary (a broken endpoint has `problem`, one
hosting inference components has `components`) into fields and gives back exactly the keys
it had, so `--json` prints what it printed before. Pure: no AWS, no CLI.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, KeysView
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, TypeVar

__all__ = ["DocumentResult", "KeyAccess"]

R = TypeVar("R", bound="DocumentResult")


class KeyAccess:
    """`result["key"]`, `result.get("key")`, `result.keys()` and `"key" in result` of a
    result that used to be a dict: deprecated for one release (FutureWarning naming the
    attribute to read instead), answered from `to_dict()` as the dict answered."""

    # Where a key without an attribute of its own is read instead (`.document` on a
    # measurement result, which holds the whole results document).
    _whole = ".to_dict()"

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - each result defines it
        raise NotImplementedError

    def _instead(self, key: str) -> str:
        """The attribute that reads `key` (`.status`), else the document's entry."""
        own = key not in ("get", "keys") and hasattr(type(self), key) or key in _fields(self)
        return f".{key}" if own else f"{self._whole}[{key!r}]"

    def _deprecated(self, what: str, instead: str) -> None:
        # "EndpointStatus['status'] is deprecated: use .status"
        warnings.warn(
            f"{type(self).__name__}{what} is deprecated: use {instead}",
            FutureWarning,
            stacklevel=3,
        )

    def __getitem__(self, key: str) -> Any:
        self._deprecated(f"[{key!r}]", self._instead(key))
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated: read the attribute (`result.status`)."""
        self._deprecated(f".get({key!r})", self._instead(key))
        return self.to_dict().get(key, default)

    def keys(self) -> KeysView[str]:
        """Deprecated: `to_dict().keys()`."""
        self._deprecated(".keys()", ".to_dict().keys()")
        return self.to_dict().keys()

    def __contains__(self, key: object) -> bool:
        self._deprecated(f": {key!r} in the result", f"{key!r} in .to_dict()")
        return key in self.to_dict()

    def __iter__(self) -> Iterator[str]:
        self._deprecated(": iterating the result's keys", ".to_dict()")
        return iter(self.to_dict())


def _fields(obj: Any) -> set[str]:
    return {f.name for f in fields(obj)} if is_dataclass(obj) else set()


@dataclass(frozen=True, kw_only=True)
class DocumentResult(KeyAccess):
    """A result read from a document whose keys vary: every key the document may have is a
    field (None when the document did not have it), and `to_dict()` is exactly the
    document, its keys in their order. `from_dict` refuses a key that is no field, so a
    new key in a document cannot be dropped from `--json` unnoticed. Made directly (not
    from a document), its document is the fields that are not None."""

    _keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._keys:
            keys = tuple(
                f.name
                for f in fields(self)
                if f.name != "_keys" and getattr(self, f.name) is not None
            )
            object.__setattr__(self, "_keys", keys)

    @classmethod
    def from_dict(cls: type[R], doc: dict[str, Any]) -> R:
        """The result of `doc` (ValueError for a key that is not one of its fields)."""
        names = {f.name for f in fields(cls) if f.name != "_keys"}
        unknown = [k for k in doc if k not in names]
        if unknown:
            raise ValueError(f"{cls.__name__} has no field for {', '.join(unknown)}")
        return cls(**doc, _keys=tuple(doc))

    def to_dict(self) -> dict[str, Any]:
        """The `--json` document: the keys the result was read from, in their order."""
        return {k: getattr(self, k) for k in self._keys}
