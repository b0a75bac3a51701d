"""The result of one plan, drafter or preflight check."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One check: `message` says what was found in one line; `fix` says what to change."""

    name: str
    status: Status
    message: str
    fix: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def passed(name: str, message: str) -> Check:
    return Check(name, "pass", message)


def warned(name: str, message: str, fix: str | None = None) -> Check:
    return Check(name, "warn", message, fix)


def failed(name: str, message: str, fix: str | None = None) -> Check:
    return Check(name, "fail", message, fix)


def any_failed(checks: list[Check]) -> bool:
    return any(c.status == "fail" for c in checks)
