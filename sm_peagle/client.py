"""`sm_peagle.Client`: the SDK's one object. It holds the session (region, profile, an
endpoint URL or a ready AWS context, progress callbacks) once; every operation is one of
its methods.

    client = sm_peagle.Client(region="us-east-1")
    ep = client.deploy("gpt-oss-20b", k=5, role=ROLE)
    client.status(ep.name).status

The module-level functions (`sm_peagle.deploy`, `sm_peagle.status`, …) are the methods
of a default client that reads the region and credentials from the environment on each
call, as `huggingface_hub.upload_file` is `HfApi().upload_file`.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from .endpoint import Endpoint, use_client_factory
from .ops.adoption import AdoptOps
from .ops.catalog import CatalogOps
from .ops.changes import ChangeOps
from .ops.deployment import DeployOps
from .ops.doctor import DoctorOps
from .ops.drafter import DrafterOps
from .ops.endpoints import EndpointOps
from .ops.health import HealthOps
from .ops.iac import IacOps
from .ops.measure import MeasureOps
from .ops.measure_analysis import AnalysisOps
from .ops.measure_sweep import SweepOps
from .ops.measure_traffic import TrafficOps
from .ops.session import Session
from .ops.training import TrainingOps

__all__ = ["Client", "Endpoint", "default_client", "module_function"]


# One mixin per ops module; adding a group of operations is one line in the bases.
class Client(
    DeployOps,
    ChangeOps,
    AdoptOps,
    EndpointOps,
    HealthOps,
    MeasureOps,
    AnalysisOps,
    SweepOps,
    TrafficOps,
    CatalogOps,
    IacOps,
    DrafterOps,
    TrainingOps,
    DoctorOps,
    Session,
):
    """The SDK: one session, every operation a method (the operations are grouped in
    mixin classes in `sm_peagle.ops`).

    Args:
        region: the AWS region; None reads it from the environment (AWS_REGION, the
            profile) at each call.
        profile: a named AWS profile.
        endpoint_url: one URL every service's requests go to (moto's server, a
            LocalStack), instead of AWS's endpoints; the process environment is left
            alone.
        aws: a ready `AwsContext` (reused clients; a plugin's target, such as the
            sandbox's: `peagle_sandbox.client()`).
        progress: called with each progress line (the CLI prints them on stderr).
        on_connect: called with the AWS context before an operation's first request.
        on_poll: called with each status a wait reads.
    """

    def endpoint(self, name: str) -> Endpoint:
        """A handle on the endpoint `name`, talking to where this client does. No request
        is sent: the handle's first operation says NotFound if there is no such endpoint.

        Args:
            name: the endpoint's name.

        Returns:
            An `Endpoint` whose methods (`status`, `logs`, `delete`, `invoke`, …) are
            this client's, for that endpoint.

        Raises:
            SpecError: `name` is not a SageMaker name.
        """
        from .ops.session import check_endpoint_name

        return self._handle(check_endpoint_name(name))

    def _handle(self, name: str, *, aws: Any = None, plan: Any = None) -> Endpoint:
        """The `Endpoint` handle for `name` on this client (on `aws` when an operation
        settled on its own context, e.g. a deploy's spec region); `plan` if known. The
        operations (`ops/`) make handles through this: they do not import endpoint.py."""
        return Endpoint(name, client=self if aws is None else self.with_aws(aws), plan=plan)


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
    "progress": "progress",
    "on_connect": "on_connect",
    "on_poll": "on_poll",
}

# The operations whose module-level functions took session keywords before the client,
# and which: `deploy(region=)` is the spec's region, `bench(progress=)` is not a line
# callback, so each operation names its own.
_TAKES_SESSION: dict[str, frozenset[str]] = {
    name: frozenset(keywords.split())
    for name, keywords in {
        "deploy": "aws say on_connect on_poll",
        "status": "region aws on_connect",
        "ls": "region aws on_connect",
        "logs": "region aws say on_connect",
        "delete": "region aws say on_connect",
        "gc": "region aws say on_connect",
        "update": "region aws say on_connect on_poll",
        "apply": "region aws say on_connect on_poll",
        "diff": "region aws on_connect",
        "adopt": "region aws say on_connect",
        "bench": "region aws say on_connect",
        "race": "region aws",
        "tune_k": "region aws say",
        "report": "say",
        "sweep": "region aws say on_connect",
        "invoke": "region aws say on_connect",
        "chat": "region aws say on_connect",
        "instances": "region progress",
        "export": "region progress",
        "iam_policy": "region progress",
        "drafter_inspect": "region progress",
        "drafter_check": "region progress",
        "drafter_push": "region progress",
        "doctor": "region",
    }.items()
}

_MODULE_FUNCTIONS: dict[str, Callable[..., Any]] = {}

# Every operation: the public methods the mixins define (not the session's own).
OPERATIONS = frozenset(
    name
    for base in Client.__mro__
    if base not in (Client, Session, object)
    for name, value in vars(base).items()
    if not name.startswith("_") and callable(value)
)


def __getattr__(name: str) -> Any:
    """`sm_peagle.client.<op>` (what `sm_peagle.<op>` resolves to): `module_function`."""
    if name in OPERATIONS:
        return module_function(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def module_function(name: str) -> Callable[..., Any]:
    """`sm_peagle.<name>`: the default client's method, with its signature; the session
    keywords the old function took (`region=`, `aws=`, `say=`, `on_connect=`, …) still
    work for one release, with a FutureWarning naming the client. The same function
    object each time (a public name reads the same twice)."""
    if name not in _MODULE_FUNCTIONS:
        _MODULE_FUNCTIONS[name] = _module_function(name)
    return _MODULE_FUNCTIONS[name]


def _module_function(name: str) -> Callable[..., Any]:
    method = getattr(Client, name)
    # A keyword the method itself takes is its own (`apply(region=)` is the spec's region).
    old_keywords = _TAKES_SESSION.get(name, frozenset()) - set(inspect.signature(method).parameters)

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in list(kwargs) if k in old_keywords}
        if not given:
            return getattr(default_client(), name)(*args, **kwargs)
        old = ", ".join(f"{k}=" for k in given)
        new = ", ".join(sorted({f"{_SESSION_KEYWORDS[k]}=" for k in given}))
        warnings.warn(
            f"sm_peagle.{name}({old}) is deprecated: make a client once, "
            f"sm_peagle.Client({new}), and call its {name} (removed in the next release)",
            FutureWarning,
            stacklevel=2,
        )
        client = Client(**{_SESSION_KEYWORDS[k]: v for k, v in given.items()})
        return getattr(client, name)(*args, **kwargs)

    # It lives here (`sm_peagle.client.<op>`); `__wrapped__` is the method it calls.
    call.__module__ = __name__
    call.__qualname__ = name
    sig = inspect.signature(method)
    call.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])  # type: ignore[attr-defined]
    return call


def _client_for(
    region: str | None = None, aws: Any = None, progress: Callable[[str], None] | None = None
) -> Client:
    """The client of a handle made without one (`Endpoint(name)`, or the deprecated
    `Endpoint(name, region=, aws=, say=)`): the default client, or one for those."""
    if region is None and aws is None and progress is None:
        return default_client()
    return Client(region=region, aws=aws, progress=progress)


use_client_factory(_client_for)
