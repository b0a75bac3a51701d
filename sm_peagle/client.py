"""`sm_peagle.Client`: the SDK's one object. It holds the session (region, profile or a
ready AWS context, progress callbacks) once; every operation is one of its methods.

    client = sm_peagle.Client(region="us-east-1")
    ep = client.deploy("gpt-oss-20b", k=5, role=ROLE)

The module-level functions (`sm_peagle.deploy`, `sm_peagle.status`, …) are the methods
of a default client that reads the region and credentials from the environment on each
call, as `huggingface_hub.upload_file` is `HfApi().upload_file`.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .ops.changes import ChangeOps
from .ops.deployment import DeployOps
from .ops.measure import MeasureOps
from .ops.measure_sweep import SweepOps
from .ops.measure_traffic import TrafficOps
from .ops.session import Session

if TYPE_CHECKING:
    from .endpoint import Endpoint

__all__ = ["Client", "default_client", "module_function"]


class Client(DeployOps, ChangeOps, MeasureOps, SweepOps, TrafficOps, Session):
    """The SDK: one session, every operation a method (the operations are grouped in
    mixin classes in `sm_peagle.ops`).

    Args:
        region: the AWS region; None reads it from the environment (AWS_REGION, the
            profile) at each call.
        profile: a named AWS profile.
        aws: a ready `AwsContext` (reused clients; a plugin's target, such as the
            sandbox's).
        progress: called with each progress line (the CLI prints them on stderr).
        on_connect: called with the AWS context before an operation's first request.
        on_poll: called with each status a wait reads.
    """

    # i34-deploy's stand-in until the client branch's `endpoint` (Endpoint(client=...)).
    def endpoint(self, name: str) -> Endpoint:
        """A handle on the endpoint `name`, talking to where this client does."""
        from .endpoint import Endpoint

        return Endpoint(name, aws=self._aws, region=self.region, say=self.progress)


_DEFAULT: Client | None = None


def default_client() -> Client:
    """The client behind the module-level functions: no region or callbacks of its own
    (each call reads the environment), made on first use."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Client()
    return _DEFAULT


# Keywords the module-level functions took before there was a client: accepted for one
# release with a FutureWarning (CHANGELOG.md), mapped to a client made for the call.
_SESSION_KEYWORDS = {
    "region": "region",
    "aws": "aws",
    "say": "progress",
    "on_connect": "on_connect",
    "on_poll": "on_poll",
}


@functools.cache
def module_function(name: str) -> Callable[..., Any]:
    """`sm_peagle.<name>`: the default client's method, with its signature; the session
    keywords the old function took (`region=`, `aws=`, `say=`, `on_connect=`) still work
    for one release, with a FutureWarning naming the client."""
    method = getattr(Client, name)
    # A keyword the method itself takes is its own (`deploy(region=)` is the spec's region).
    own = set(inspect.signature(method).parameters)

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in list(kwargs) if k in _SESSION_KEYWORDS and k not in own}
        if not given or name not in _TAKES_SESSION:
            kwargs.update(given)
            return getattr(default_client(), name)(*args, **kwargs)
        old = ", ".join(f"{k}=" for k in given)
        new = ", ".join(f"{_SESSION_KEYWORDS[k]}=" for k in given)
        warnings.warn(
            f"sm_peagle.{name}({old}) is deprecated: make a client once, "
            f"sm_peagle.Client({new}), and call its {name} (removed in the next release)",
            FutureWarning,
            stacklevel=2,
        )
        client = Client(**{_SESSION_KEYWORDS[k]: v for k, v in given.items()})
        return getattr(client, name)(*args, **kwargs)

    sig = inspect.signature(method)
    call.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])  # type: ignore[attr-defined]
    return call


# The operations whose module-level functions took session keywords before the client.
_TAKES_SESSION: frozenset[str] = frozenset(
    ("deploy", "update", "apply", "diff", "adopt")
    + ("bench", "chat", "invoke", "race", "report", "sweep", "tune_k")
)
