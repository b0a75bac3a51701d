"""The operation tags a deploy, apply or update writes on what it creates, from their
rule (sm_peagle/lifecycle/operation.py's docstring): `peagle:operation` is
`op-<UTC yyyymmddThhmmssZ>-<6 hex>`, one id for every resource of a run;
`peagle:operation-owner` is `<host>:<pid>` of the process that ran it;
`peagle:operation-until` an ISO-8601 UTC time after the start. They differ from run to
run, so tests that compare requests take them out first (`without_operation_tags`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

KEYS = ("peagle:operation", "peagle:operation-owner", "peagle:operation-until")
COMPLETED = "peagle:completed"
ID = re.compile(r"^op-(\d{8}T\d{6}Z)-[0-9a-f]{6}$")


def without_operation_tags(req: dict[str, Any]) -> dict[str, Any]:
    """`req` without the three operation tags (the exports, which run no operation, and
    plan(), which is pure, write none)."""
    return {**req, "Tags": [t for t in req.get("Tags", []) if t["Key"] not in KEYS]}


def operation_of(req: dict[str, Any], *, owner: str | None = None) -> str:
    """The operation id `req` carries, after checking the three tags against the rule
    (`owner`: the `host:pid` expected, when the test knows the process)."""
    tags = {t["Key"]: t["Value"] for t in req.get("Tags", [])}
    op = tags["peagle:operation"]
    m = ID.match(op)
    assert m, op
    started = datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    until = datetime.fromisoformat(tags["peagle:operation-until"].replace("Z", "+00:00"))
    assert until > started, tags
    host, _, pid = tags["peagle:operation-owner"].rpartition(":")
    assert host and pid.isdigit(), tags
    if owner is not None:
        assert tags["peagle:operation-owner"] == owner
    return op
