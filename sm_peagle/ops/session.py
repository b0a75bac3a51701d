"""The session every SDK operation runs on (`Session`, the base of `sm_peagle.Client`),
and argument checks they all share.

A client holds its target once: an `AwsContext` (`aws=`: reused clients, a profile, a
plugin's target such as the sandbox's), or `region`/`profile`/`endpoint_url`, from which
each operation makes its own context, failing in one line (NoCredentials) when no
credentials can be found, before any request. `connect(region)` is the public one-off
(`sm_peagle.connect`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import Call, Param, SpecError, text

__all__ = [
    "OnConnect",
    "Session",
    "Say",
    "as_peagle_error",
    "check_region",
    "connect",
    "quiet",
    "seconds",
]

OnConnect = Callable[[Any], None]

Say = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default `say`: an SDK call prints nothing."""


def connect(region: str | None = None) -> Any:
    """A fresh AWS context for `region` whose credentials are known to exist (no request
    is sent: the local credential chain is consulted).

    Args:
        region: the AWS region (None: the environment's).

    Returns:
        An `AwsContext`.

    Raises:
        NoCredentials: no credentials can be found.
    """
    from ..aws import AwsContext

    aws = AwsContext(region)
    aws.check_credentials()
    return aws


class Session:
    """What every SDK operation runs on, held once (the base of `sm_peagle.Client`).

    The target: `region` (and `profile`), `endpoint_url` (one URL for every service, such
    as moto's server), or a ready `aws` context (an `AwsContext`, which is how a plugin
    such as the sandbox hands out its target); the progress callbacks: `progress` (one
    line at a time), `on_connect` (sees the AWS context before an operation's first
    request), `on_poll` (each status a wait reads).

    Operations are methods of mixin classes over this one (`ops/*.py`); they reach AWS
    through `self._connect()` and report through `self._say(...)`, so no operation takes
    `region`, `aws`, `say` or `on_connect` as a parameter."""

    def __init__(
        self,
        region: str | None = None,
        *,
        profile: str | None = None,
        endpoint_url: str | None = None,
        aws: Any = None,
        progress: Say | None = None,
        on_connect: OnConnect | None = None,
        on_poll: Callable[[Any], None] | None = None,
    ) -> None:
        self.region = check_region(region)
        self.profile = profile
        self.endpoint_url = endpoint_url
        self._aws = aws
        self.progress = progress
        self.on_connect = on_connect
        self.on_poll = on_poll

    def __repr__(self) -> str:
        region = self.region
        url = self.endpoint_url
        if self._aws is not None:  # the held context says where it talks to
            region = region or getattr(self._aws, "given_region", None)
            url = url or getattr(self._aws, "endpoint_url", None)
        where = [f"region={region!r}" if region else "region from the environment"]
        if self.profile:
            where.append(f"profile={self.profile!r}")
        if url:
            where.append(f"endpoint_url={url!r}")
        return f"{type(self).__name__}({', '.join(where)})"

    @property
    def aws(self) -> Any:
        """The AWS context this client holds (`aws=`, or `with_aws`), or None: each
        operation then makes its own for `region`, `profile` and `endpoint_url`."""
        return self._aws

    def context(self) -> Any:
        """The AWS context an operation runs on, without announcing it: the held one, or a
        fresh one for `region`, `profile` and `endpoint_url` whose credentials are known
        to exist.

        Returns:
            An `AwsContext`.

        Raises:
            NoCredentials: no credentials can be found (nothing is sent).
        """
        if self._aws is not None:
            return self._aws
        from ..aws import AwsContext

        ctx = AwsContext(self.region, self.profile, endpoint_url=self.endpoint_url)
        ctx.check_credentials()
        return ctx

    def _connect(self) -> Any:
        """`context()`, which `on_connect` sees first (the CLI says where it talks to)."""
        ctx = self.context()
        if self.on_connect is not None:
            self.on_connect(ctx)
        return ctx

    def with_aws(self, aws: Any) -> Any:
        """A copy of this client that holds `aws` (an `AwsContext`), with the same
        callbacks: what a handle keeps, or the context an operation settled on (a deploy's
        spec region).

        Args:
            aws: the AWS context the copy's operations run on.

        Returns:
            The copy (the same class as this client).
        """
        import copy

        other = copy.copy(self)
        other._aws = aws
        return other

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
        raise SpecError(
            f"region: {problem}",
            remedy="pass a region such as us-east-1",
            field="region",
            value=value,
        )
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
    path: Any, param: str = "output", *, directory: bool = False, create_parents: bool = True
) -> Path | None:
    """`path` as a Path (None stays None), or SpecError when it cannot be written, checked
    before any work so a typo costs nothing: an existing directory where a file goes (or a
    file where a directory goes), a path under a file, a missing parent directory (unless
    the writer creates parents), or a directory that refuses a new file. Writability is
    probed with a temporary file, removed at once: permission bits say nothing for root,
    /proc or /sys. Nothing is left behind.

    `param`: the keyword argument that gave the path (`output`, `requests_out`), which the
    error names (the CLI names its flag)."""
    import os
    import tempfile

    if path is None:
        return None
    name = param

    def refuse(problem: str, remedy: Any = None, **values: Any) -> SpecError:
        fix = remedy or text("give {p} a path in a directory you can write", p=Param(name))
        message = text("{p}: " + problem, p=Param(name), **values)
        return SpecError(message, remedy=fix, field=name, value=str(path))

    p = Path(path).expanduser()
    if directory:
        if p.exists() and not p.is_dir():
            raise refuse("{f} is a file, not a directory", f=p)
    elif p.is_dir():
        raise refuse("{f} is a directory", text("{p} {f}/<file name>", p=Param(name), f=p), f=p)
    parent = p if directory and p.is_dir() else p.parent
    probe = parent
    while not probe.exists():
        if probe.is_symlink() or probe == probe.parent:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise refuse("{f} is a file, not a directory", f=probe)
    if not create_parents and probe != parent:
        raise refuse("directory {f} does not exist", f=parent)
    if not directory and p.exists():
        if not os.access(p, os.W_OK):
            raise refuse("{f} is not writable", f=p)
        return p
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise refuse("{f} is not writable ({probe}: {why})", f=p, probe=probe,
                     why=e.strerror or e) from None  # fmt: skip
    return p


def check_endpoint_name(name: Any, what: str = "endpoint name", *, field: str | None = None) -> str:
    """A SageMaker resource name as AWS's own pattern allows it (botocore's EndpointName /
    InferenceComponentName: `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`), checked before any
    request: AWS would answer a ValidationException, and such a name cannot exist.
    `field`: the parameter of the caller that holds the name (default `name`, or
    `component` for a component)."""
    from ..planning.spec.model import AWS_NAME_RE

    field = field or ("component" if what == "component" else "name")
    listed = text("`{ls}` lists the endpoints peagle manages", ls=Call("ls"))
    if not isinstance(name, str) or not name.strip():
        raise SpecError(
            f"{what}: a non-empty name is needed, not {name!r}",
            remedy=listed,
            field=field,
            value=name,
        )
    if not AWS_NAME_RE.match(name):
        raise SpecError(
            f"{what} {name!r} is not a SageMaker name (letters, digits and hyphens, "
            "1-63 characters, starting and ending with a letter or digit)",
            remedy=listed,
            field=field,
            value=name,
            rule="^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
        )
    return name
