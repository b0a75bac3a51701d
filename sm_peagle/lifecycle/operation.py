"""Operations: which run of peagle made a resource, and whether that run may still be going.

Every mutating run (deploy, apply, update) is an operation with an id, and every resource
it creates carries the id as a tag from its Create* request on. That makes what exists on
AWS the record, not what the client heard back:

- a rollback deletes what carries its own id under the names it tried to create, so a
  resource whose Create* response never arrived (Ctrl-C while it was in flight) is found
  and removed, and a resource of the same name made by someone else (a deploy racing this
  one) is never touched;
- `peagle gc` leaves alone the resources of an operation that may still be running
  (another terminal, another machine), however young or old, and removes those of an
  operation that is over and never completed (killed with SIGKILL, say);
- `peagle status` names an operation that did not finish.

The tags (keys in `planning.spec.tags`, which counts them against SageMaker's 50):
- `peagle:operation`        the id: `op-<UTC start>-<6 hex>`;
- `peagle:operation-owner`  `<host>:<pid>` of the process that runs it;
- `peagle:operation-until`  when it is over whatever happens (start + its wait timeout +
  the time a rollback may take), on AWS's clock (its `Date` header), which is the one
  every gc judges it on: after that nothing of it can still be running;
- `peagle:completed`        on the endpoint only, written when an operation completes (the
  id of the last one that did). A deployment whose endpoint was created by, or whose config
  was made by, an operation that never wrote it did not finish.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..planning.spec.tags import COMPLETED, OPERATION, OPERATION_KEYS, OWNER, UNTIL

__all__ = [
    "COMPLETED",
    "check_id",
    "OPERATION",
    "OPERATION_KEYS",
    "OWNER",
    "UNTIL",
    "Operation",
    "ROLLBACK_SECONDS",
]

ID = re.compile(r"^op-\d{8}T\d{6}Z-[0-9a-f]{6}$")

# A rollback waits for each deletion up to `Lifecycle.delete_and_confirm`'s 900 s; an
# endpoint, its config and its models, one after the other, bound it.
ROLLBACK_SECONDS = 3 * 900

# The operations this process is running now: for a resource whose owner is this very
# process (a notebook that deploys, is interrupted, then runs gc) the pid says nothing.
_ACTIVE: set[str] = set()


def _host() -> str:
    return socket.gethostname()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except OSError:
        return True  # cannot tell: assume it may run
    return True


@dataclass(frozen=True)
class Operation:
    id: str
    owner: str  # host:pid
    until: datetime

    @classmethod
    def start(cls, seconds: float, now: datetime | None = None) -> Operation:
        """A new operation of this process that is over, whatever happens, within
        `seconds` plus a rollback's worst case. Active until `end()`. `now`: AWS's time
        (`AwsContext.synced_aws_now`), which its deadline is judged on by every gc, here
        or elsewhere (None: the local clock). A deadline stamped on a local clock that is
        behind AWS's would make a fresh operation look over, and its resources garbage."""
        now = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
        op = cls(
            id=f"op-{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}",
            owner=f"{_host()}:{os.getpid()}",
            until=now + timedelta(seconds=int(seconds) + ROLLBACK_SECONDS),
        )
        _ACTIVE.add(op.id)
        return op

    def end(self) -> None:
        _ACTIVE.discard(self.id)

    @classmethod
    def from_tags(cls, tags: dict[str, str]) -> Operation | None:
        """The operation that made a resource, from its tags (None: made by a peagle
        from before operations, by adopt, or outside peagle)."""
        op = tags.get(OPERATION)
        if not op:
            return None
        try:
            until = datetime.fromisoformat(tags[UNTIL].replace("Z", "+00:00"))
        except (KeyError, ValueError):
            until = datetime.min.replace(tzinfo=UTC)  # unreadable: treat as over
        if until.tzinfo is None:
            until = until.replace(tzinfo=UTC)
        return cls(id=op, owner=tags.get(OWNER, ""), until=until)

    def tags(self) -> list[dict[str, str]]:
        """The tags every resource of this operation is created with."""
        return [
            {"Key": OPERATION, "Value": self.id},
            {"Key": OWNER, "Value": self.owner},
            {"Key": UNTIL, "Value": self.until.isoformat().replace("+00:00", "Z")},
        ]

    def stamp(self, request: dict[str, Any]) -> dict[str, Any]:
        """`request` (a Create* request) with this operation's tags."""
        kept = [t for t in request.get("Tags", []) if t["Key"] not in OPERATION_KEYS]
        return {**request, "Tags": kept + self.tags()}

    def may_be_running(self, now: datetime | None = None) -> bool:
        """Could the process running it still create or delete something? Not after its
        deadline; on this host, only while its process lives (in this process, only
        while it is active); from another host, until the deadline. `now`: AWS's time
        (`aws.aws_now(client)`), the clock the deadline was stamped on (None: local)."""
        now = now or datetime.now(UTC)
        if now >= self.until:
            return False
        host, _, pid = self.owner.rpartition(":")
        if host != _host() or not pid.isdigit():
            return True
        if int(pid) == os.getpid():
            return self.id in _ACTIVE
        return _pid_alive(int(pid))

    def describe(self) -> str:
        """`op-… (run by host:pid, over by …)` for messages."""
        return f"{self.id} (run by {self.owner}, over by {self.until:%Y-%m-%d %H:%M}Z at latest)"


def check_id(text: Any) -> str:
    """An operation id as peagle prints them (`op-20261126T021500Z-3f9a1c`), or SpecError."""
    from ..errors import Call, SpecError
    from ..errors import text as text_

    if isinstance(text, str) and ID.match(text.strip()):
        return text.strip()
    raise SpecError(
        f"{text!r} is not an operation id (they look like op-20261126T021500Z-3f9a1c)",
        remedy=text_(
            "copy the id from the interrupted command's message or `{status}`",
            status=Call("status", "NAME"),
        ),
        field="operation",
        value=text,
    )
