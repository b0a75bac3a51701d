"""The AWS context every SDK operation runs on, and argument checks they all share.

`aws=` on each operation takes an `AwsContext` (to reuse clients, a profile or a
sandbox); without one, the operation makes its own for `region`, failing in one line
(NoCredentials) when no credentials can be found, before any request.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SpecError

__all__ = [
    "OnConnect",
    "Session",
    "Say",
    "as_peagle_error",
    "check_region",
    "connect",
    "context",
    "quiet",
    "seconds",
]

OnConnect = Callable[[Any], None]

Say = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default `say`: an SDK call prints nothing."""


def connect(region: str | None = None) -> Any:
    """A fresh AWS context for `region` whose credentials are known to exist (no request
    is sent: the local credential chain is consulted). NoCredentials otherwise."""
    from ..aws import AwsContext

    aws = AwsContext(region)
    aws.check_credentials()
    return aws


def context(region: str | None, aws: Any, on_connect: Callable[[Any], None] | None = None) -> Any:
    """`aws` when given, else `connect(region)`; `on_connect` sees it before the first
    request (the CLI says where it talks to)."""
    ctx = aws if aws is not None else connect(region)
    if on_connect is not None:
        on_connect(ctx)
    return ctx


class Session:
    """What every SDK operation runs on, held once (the base of `sm_peagle.Client`).

    The target: `region` (and `profile`), or a ready `aws` context (an `AwsContext`,
    which is how a plugin such as the sandbox hands out its target); the progress
    callbacks: `progress` (one line at a time), `on_connect` (sees the AWS context before
    an operation's first request), `on_poll` (each status a wait reads).

    Operations are methods of mixin classes over this one (`ops/*.py`); they reach AWS
    through `self._connect()` and report through `self._say(...)`, so no operation takes
    `region`, `aws`, `say` or `on_connect` as a parameter."""

    def __init__(
        self,
        region: str | None = None,
        *,
        profile: str | None = None,
        aws: Any = None,
        progress: Say | None = None,
        on_connect: OnConnect | None = None,
        on_poll: Callable[[Any], None] | None = None,
    ) -> None:
        self.region = check_region(region)
        self.profile = profile
        self._aws = aws
        self.progress = progress
        self.on_connect = on_connect
        self.on_poll = on_poll

    def __repr__(self) -> str:
        where = f"region={self.region!r}" if self.region else "region from the environment"
        if self._aws is not None:
            where = f"aws={self._aws!r}"
        return f"{type(self).__name__}({where})"

    def _connect(self) -> Any:
        """The AWS context for one operation: the held one, or a fresh one for `region`
        (and `profile`) whose credentials are known to exist (NoCredentials otherwise,
        before any request); `on_connect` sees it first."""
        if self._aws is not None:
            ctx = self._aws
        else:
            from ..aws import AwsContext

            ctx = AwsContext(self.region, self.profile)
            ctx.check_credentials()
        if self.on_connect is not None:
            self.on_connect(ctx)
        return ctx

    def _say(self, message: str) -> None:
        """One progress line to `progress` (nothing without one)."""
        if self.progress is not None:
            self.progress(message)


def check_region(value: str | None) -> str | None:
    """`region`, checked as the spec's `region` field is: SpecError (exit 2) for a name
    that is not an AWS region, before any request."""
    if value is None:
        return value
    from ..catalog.regions import region_problem

    problem = region_problem(value)
    if problem:
        raise SpecError(f"region: {problem}", remedy="pass a region such as us-east-1")
    return value


def as_peagle_error(exc: BaseException) -> Exception | None:
    """The one botocore -> peagle error translation (`aws.as_peagle_error`, remedy kept;
    None for an exception that is not botocore's), for callers that must not import the
    AWS layer (the CLI's error boundary)."""
    from ..aws import as_peagle_error as translate

    return translate(exc)


def seconds(value: str | float | int | None, what: str) -> float | None:
    """A duration as the CLI takes it ("5m", "2h", "1h30m", "600s", "600") or a number of
    seconds, checked: SpecError (exit 2) naming `what` for a malformed or negative one."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SpecError(f"{what}: a duration, not {value!r}", remedy="e.g. 5m, 2h or 600")
    if isinstance(value, int | float):
        if value < 0:
            raise SpecError(f"{what}: {value} is negative", remedy="e.g. 5m, 2h or 600")
        return float(value)
    if not isinstance(value, str):
        raise SpecError(f"{what}: a duration, not {value!r}", remedy="e.g. 5m, 2h or 600")
    from ..lifecycle.waiter import parse_duration

    return parse_duration(value, field=what)


def check_output_path(
    path: Any, flag: str = "--output", *, directory: bool = False, create_parents: bool = True
) -> Path | None:
    """`path` as a Path (None stays None), or SpecError when it cannot be written, checked
    before any work so a typo costs nothing: an existing directory where a file goes (or a
    file where a directory goes), a path under a file, a missing parent directory (unless
    the writer creates parents), or a directory that refuses a new file. Writability is
    probed with a temporary file, removed at once: permission bits say nothing for root,
    /proc or /sys. Nothing is left behind."""
    import os
    import tempfile

    if path is None:
        return None
    p = Path(path).expanduser()
    fix = f"give {flag} a path in a directory you can write"
    if directory:
        if p.exists() and not p.is_dir():
            raise SpecError(f"{flag}: {p} is a file, not a directory", remedy=fix)
    elif p.is_dir():
        raise SpecError(f"{flag}: {p} is a directory", remedy=f"{flag} {p}/<file name>")
    parent = p if directory and p.is_dir() else p.parent
    probe = parent
    while not probe.exists():
        if probe.is_symlink() or probe == probe.parent:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise SpecError(f"{flag}: {probe} is a file, not a directory", remedy=fix)
    if not create_parents and probe != parent:
        raise SpecError(f"{flag}: directory {parent} does not exist", remedy=fix)
    if not directory and p.exists():
        if not os.access(p, os.W_OK):
            raise SpecError(f"{flag}: {p} is not writable", remedy=fix)
        return p
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise SpecError(
            f"{flag}: {p} is not writable ({probe}: {e.strerror or e})", remedy=fix
        ) from None
    return p


def check_endpoint_name(name: Any, what: str = "endpoint name") -> str:
    """A SageMaker resource name as AWS's own pattern allows it (botocore's EndpointName /
    InferenceComponentName: `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`), checked before any
    request: AWS would answer a ValidationException, and such a name cannot exist."""
    from ..planning.spec.model import AWS_NAME_RE

    if not isinstance(name, str) or not name.strip():
        raise SpecError(
            f"{what}: a non-empty name is needed, not {name!r}",
            remedy="`peagle ls` lists the endpoints peagle manages",
        )
    if not AWS_NAME_RE.match(name):
        raise SpecError(
            f"{what} {name!r} is not a SageMaker name (letters, digits and hyphens, "
            "1-63 characters, starting and ending with a letter or digit)",
            remedy="`peagle ls` lists the endpoints peagle manages",
        )
    return name
