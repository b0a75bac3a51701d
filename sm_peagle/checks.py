"""The result of one plan, drafter or preflight check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import Text, as_text, text

Status = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One check: `message` says what was found in one line; `fix` says what to change.

    Both are `Text`s where they name a parameter or a call (`k=`, `sm_peagle.bench()`;
    the CLI words them as `-k`, `peagle bench`). `field` is the SDK keyword the check is
    about (`k`, `instance_type`) when it is about one, so a `CheckFailed` can name it."""

    name: str
    status: Status
    message: str
    fix: str | None = None
    field: str | None = None

    def to_dict(self) -> dict:
        doc = {"name": self.name, "status": self.status, "message": self.message, "fix": self.fix}
        if self.field is not None:
            doc["field"] = self.field
        return doc

    def line(self, *, with_fix: bool = True) -> Text:
        """`name: message (fix: fix)` as one Text, the parameters and calls it names kept
        (an f-string would flatten them to the Python wording)."""
        fix = as_text(self.fix) if with_fix else None
        return text(
            "{name}: {message}" + (" (fix: {fix})" if fix else ""),
            name=self.name,
            message=as_text(self.message),
            fix=fix,
        )


def passed(name: str, message: str, *, field: str | None = None) -> Check:
    return Check(name, "pass", message, field=field)


def warned(name: str, message: str, fix: str | None = None, *, field: str | None = None) -> Check:
    return Check(name, "warn", message, fix, field)


def failed(name: str, message: str, fix: str | None = None, *, field: str | None = None) -> Check:
    return Check(name, "fail", message, fix, field)


def any_failed(checks: list[Check]) -> bool:
    return any(c.status == "fail" for c in checks)
