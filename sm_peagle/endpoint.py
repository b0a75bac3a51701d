"""The `Endpoint` handle: one SageMaker endpoint, and the operations on it.

`sm_peagle.deploy(...)` (`Client.deploy`, in `sm_peagle.ops.deployment`) returns one:

    with sm_peagle.deploy("gpt-oss-20b", k=5, role=ROLE) as ep:
        print(ep.status().status)
    # the endpoint, its config and model are deleted here, even on an exception

`deploy`, `plan`, `plan_for` and `Deployment` lived here before the client; they still
import from here for one release, with a FutureWarning (`__getattr__` below).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .lifecycle.spec_tags import deployed_spec
from .planning.spec.model import DeploymentSpec

__all__ = ["Endpoint", "deployed_spec", "use_client_factory"]

if TYPE_CHECKING:  # annotations only
    from .lifecycle.adopt import AdoptResult
    from .ops.changes import UpdateResult
    from .ops.deployment import Deployment
    from .ops.endpoints import DeleteResult, EndpointStatus, LogStream
    from .ops.health import HealthReport


# How a handle made without a client gets one (the default client, or one for the
# deprecated region=/aws=/say=): set by sm_peagle.client when it is imported, as the handle
# sits below the client and must not import it (`sm_peagle.Endpoint` is read through it).
_CLIENT_FACTORY: Callable[..., Any] | None = None


def use_client_factory(factory: Callable[..., Any]) -> None:
    """Set what `Endpoint(name)` without a client talks through (sm_peagle.client does)."""
    global _CLIENT_FACTORY
    _CLIENT_FACTORY = factory


class Endpoint:
    """A handle on one SageMaker endpoint, talking to where its client does: its methods
    are the client's operations for this endpoint (`ep.status()` is
    `client.status(ep.name)`). Made by `client.endpoint(name)` and returned by
    `client.deploy(...)`.

    Args:
        name: the endpoint's name.
        client: the `sm_peagle.Client` it talks through (default: the module functions'
            client, reading the environment).
        plan: the plan it was deployed from, if known.
        aws: deprecated: give a client (`sm_peagle.Client(aws=...)`) instead.
        region: deprecated: give a client (`sm_peagle.Client(region=...)`) instead.
        say: deprecated: give a client (`sm_peagle.Client(progress=...)`) instead.

    Attributes:
        name: the endpoint's name.
        plan: the plan it was deployed from (set by `deploy`, `update` and `adopt`), or
            None when the handle was made by name.
        adoption: what `Endpoint.adopt` found (the reconstructed spec, checks and
            differences), or None.
        deployment: what `deploy` did (a `Deployment`), or None.
    """

    def __init__(
        self,
        name: str,
        *,
        client: Any = None,
        plan: Any = None,
        aws: Any = None,
        region: str | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if client is None:
            if _CLIENT_FACTORY is None:
                # Only for a handle made before sm_peagle.client was ever imported (this
                # module imported directly, e.g. the deprecated `endpoint.deploy`). A
                # runtime load, by name, of the module that registers the factory: the
                # handle sits below the client and must not import it.
                import importlib

                importlib.import_module(f"{__package__}.client")
            assert _CLIENT_FACTORY is not None
            client = _CLIENT_FACTORY(region=region, aws=aws, progress=say)
        self.name = name
        self._client = client
        self.plan = plan

    def __repr__(self) -> str:
        return f"Endpoint({self.name!r}, client={self._client!r})"

    @property
    def client(self) -> Any:
        """The client this handle talks through, holding one AWS context for the handle's
        life (made on first use: the region and credentials are read once)."""
        if self._client.aws is None:
            self._client = self._client.with_aws(self._client.context())
        return self._client

    @property
    def aws(self) -> Any:
        """The AWS context (`AwsContext`) this handle's requests go through."""
        return self.client.aws

    def _say(self, message: str) -> None:
        if self._client.progress is not None:
            self._client.progress(message)

    @classmethod
    def attach(cls, name: str, *, region: str | None = None, aws: Any = None) -> Endpoint:
        """Deprecated: `sm_peagle.Client(region=...).endpoint(name)` (removed in the next
        release). A handle on an existing endpoint; NotFound if there is none."""
        import warnings

        warnings.warn(
            "Endpoint.attach is deprecated: use sm_peagle.Client(region=...).endpoint(name) "
            "(removed in the next release)",
            FutureWarning,
            stacklevel=2,
        )
        return cls._attach(name, region=region, aws=aws)

    @classmethod
    def _attach(cls, name: str, *, region: str | None = None, aws: Any = None) -> Endpoint:
        ep = cls(name, aws=aws, region=region)
        ep.status()
        return ep

    # Set by `Endpoint.adopt`: `.spec`, `.checks`, `.differences`, `.tagged`.
    adoption: AdoptResult | None = None
    # Set by `deploy`: what was created, the status reached, the time it took.
    deployment: Deployment | None = None

    @classmethod
    def adopt(
        cls,
        name: str,
        *,
        model: str | None = None,
        dry_run: bool = False,
        accept_differences: bool = False,
        client: Any = None,
        **deprecated: Any,
    ) -> Endpoint:
        """Take an endpoint made elsewhere under peagle's management (`peagle adopt`):
        its reconstructed spec, checks and differences are in `.adoption` (`.spec`,
        `.checks`, `.differences`); with `dry_run` nothing is tagged. SpecError (nothing
        tagged) for what peagle cannot represent (fields its spec cannot carry unless
        `accept_differences`), an endpoint not settled InService, one sharing its config
        or model with another endpoint, or one it already manages; NotFound if none.

        Args:
            name: the endpoint to adopt.
            model: the catalog alias or JumpStart id it serves, when its tags cannot say.
            dry_run: reconstruct and check only; tag nothing.
            accept_differences: adopt although the spec cannot carry every field.
            client: the `sm_peagle.Client` to talk through (default: the module
                functions' client). `region=`, `aws=` and `say=` still work for one
                release, with a FutureWarning.
        """
        old = {k: deprecated.pop(k) for k in ("region", "aws", "say") if k in deprecated}
        if deprecated:
            raise TypeError(f"Endpoint.adopt() got unexpected keywords {sorted(deprecated)}")
        if old:
            import warnings

            warnings.warn(
                f"Endpoint.adopt({', '.join(f'{k}=' for k in old)}) is deprecated: give "
                "client=sm_peagle.Client(...) (removed in the next release)",
                FutureWarning,
                stacklevel=2,
            )
        ep = cls(name, client=client, **old)
        ep.adoption = ep.client.adopt(
            name,
            model=model,
            dry_run=dry_run,
            accept_differences=accept_differences,
        )
        ep.plan = ep.adoption.plan
        return ep

    def lifecycle(self, **kw: Any) -> Any:
        """The lower-level `Lifecycle` (create, wait, roll back, update, delete) on this endpoint's
        AWS context; `deploy`, `update` and `delete` are the supported entry points."""
        from .lifecycle.manager import Lifecycle

        return Lifecycle(self.aws, say=self._say, **kw)

    def status(self) -> EndpointStatus:
        """`client.status(name)` for this endpoint."""
        return self.client.status(self.name)

    def wait(self, timeout: float = 8100, **kw: Any) -> dict[str, Any]:
        """Poll DescribeEndpoint until the endpoint is InService (or `wanted=`) and return the last
        description; DeploymentFailed when it fails, DeploymentTimeout after `timeout` seconds,
        NotFound when it is deleted meanwhile."""
        from .lifecycle.waiter import wait_for_endpoint

        return wait_for_endpoint(self.aws.client("sagemaker"), self.name, timeout=timeout, **kw)

    def delete(
        self, *, keep_model: bool = False, force: bool = False, keep_logs: bool = False
    ) -> DeleteResult:
        """`client.delete(name)` for this endpoint."""
        return self.client.delete(
            self.name, keep_model=keep_model, force=force, keep_logs=keep_logs
        )

    def spec(self) -> DeploymentSpec:
        """The DeploymentSpec this endpoint was deployed from, read back from its tags (NotFound
        when the endpoint does not exist)."""
        return deployed_spec(self.aws.client("sagemaker"), self.name)

    def update(
        self,
        *,
        k: int | None = None,
        mode: str | None = None,
        instance_type: str | None = None,
        instance_count: int | None = None,
        component: str | None = None,
        copies: int | None = None,
        timeout: str | float | None = None,
        on_poll: Callable[[Any], None] | None = None,
        **spec_options: Any,
    ) -> UpdateResult:
        """`sm_peagle.update(name, ...)` for this endpoint: K, mode or instances in place;
        on an endpoint hosting inference components, one component's K or mode
        (`update(component="p-eagle", k=5)`) or copies (`component=..., copies=0`); any
        other spec option (image=, autoscale=, …) for a one-model endpoint. `.plan` becomes
        the new plan. Nothing changes on error."""
        client = self.client
        if on_poll is not None:  # this call's callback, on a copy of the client
            client = client.with_aws(self.aws)
            client.on_poll = on_poll
        result = client.update(
            self.name,
            k=k,
            mode=mode,
            instance_type=instance_type,
            instance_count=instance_count,
            component=component,
            copies=copies,
            timeout=timeout,
            **spec_options,
        )
        if result.plan is not None:
            self.plan = result.plan
        return result

    def inference_component(self, component: str | None = None) -> str | None:
        """The InferenceComponentName invocations of this endpoint carry for `component`
        (its full name, or the short name it was deployed with), checked against the
        endpoint's components as `--component` is in the CLI: SpecError naming them when
        the endpoint hosts components and none (or another) is named, or when one is named
        for an endpoint that hosts none. Checked once per handle and name."""
        from .lifecycle.component_targets import resolve_component

        cache = self.__dict__.setdefault("_components", {})
        if component not in cache:
            sm = self.aws.client("sagemaker")
            cache[component] = resolve_component(sm, self.name, component, flag="component=")
        return cache[component]

    def logs(
        self, *, since: str | float = "10m", follow: bool = False, component: str | None = None
    ) -> LogStream:
        """`client.logs(name, ...)` for this endpoint: its CloudWatch log events, or
        with `component` that inference component's; `since` "5m", "2h" or seconds."""
        return self.client.logs(self.name, since=since, follow=follow, component=component)

    def health(self, *, window: str | float = "1h", component: str | None = None) -> HealthReport:
        """`client.health(name, ...)` for this endpoint: whether speculation pays over the
        last `window` ("paying", "degraded", "off" or "no data", with the evidence)."""
        return self.client.health(self.name, window=window, component=component)

    def runtime(self, *, max_pool_connections: int = 10, component: str | None = None) -> Any:
        """The endpoint's RuntimeClient (cached per pool size and component: size it to
        concurrency); with `component`, every invocation carries InferenceComponentName."""
        from .runtime.client import RuntimeClient

        ic = self.inference_component(component)
        cache = self.__dict__.setdefault("_runtimes", {})
        if (max_pool_connections, ic) not in cache:
            cache[max_pool_connections, ic] = RuntimeClient(
                self.aws,
                self.name,
                max_pool_connections=max_pool_connections,
                inference_component=ic,
            )
        return cache[max_pool_connections, ic]

    def invoke(
        self,
        messages: Any = None,
        prompt: Any = None,
        *,
        component: str | None = None,
        **params: Any,
    ) -> Any:
        """One whole answer -> runtime.Completion. `messages` (chat; a str is one user
        message) or `prompt` (completions); params: max_tokens, temperature, system, …
        `component`: the inference component to invoke (required on an endpoint that
        hosts components; see `inference_component()`)."""
        return self.runtime(component=component).invoke(messages, prompt, **params)

    def stream(
        self,
        messages: Any = None,
        prompt: Any = None,
        *,
        component: str | None = None,
        **params: Any,
    ) -> Any:
        """A streamed answer -> runtime.StreamResult: iterate StreamChunks, then
        `.completion()` for text, usage, TTFT, TPOT and tokens per chunk."""
        return self.runtime(component=component).stream(messages, prompt, **params)

    async def ainvoke(
        self,
        messages: Any = None,
        prompt: Any = None,
        *,
        component: str | None = None,
        **params: Any,
    ) -> Any:
        """`invoke`, awaitable: one request on the endpoint (or `component`) without blocking the
        event loop; the same arguments and result."""
        return await self.runtime(component=component).ainvoke(messages, prompt, **params)

    def astream(
        self,
        messages: Any = None,
        prompt: Any = None,
        *,
        component: str | None = None,
        **params: Any,
    ) -> Any:
        """-> runtime.AsyncStreamResult: `async for chunk in ep.astream(...)`."""
        return self.runtime(component=component).astream(messages, prompt, **params)

    def bench(self, *, component: str | None = None, **options: Any) -> Any:
        """Benchmark this endpoint (`peagle bench`; see `sm_peagle.bench` for every
        option) -> BenchResult, which reads like the peagle.bench/1 document
        (`r.levels`; `r.to_dict()`). `concurrency=2`, `[1, 4]` or `"1,4"`; every
        option is checked before any request (SpecError). `component`: the inference
        component to benchmark (checked before any traffic). The older spellings
        `duration_s=`, `acceptance_wait_s=` and `rates=` still work."""
        for old, new in (("duration_s", "duration"), ("acceptance_wait_s", "acceptance_wait"),
                         ("rates", "rate")):  # fmt: skip
            if old in options:
                options[new] = options.pop(old)
        if options.get("rate") in ([None], (None,)):
            options["rate"] = None
        return self.client.bench(self, component=component, **options)

    def to_sagemaker(self, component: str | None = None) -> Any:
        """This endpoint as a `sagemaker.core.resources.Endpoint` (or, with `component`,
        that `InferenceComponent`), on peagle's boto3 session and region. Needs the
        extra: pip install 'sm-peagle[sagemaker]'."""
        from .bridge.sagemaker_sdk import to_sagemaker

        return to_sagemaker(self, component)

    @classmethod
    def from_sagemaker(cls, resource: Any, *, aws: Any = None) -> Endpoint:
        """A handle on the endpoint of a `sagemaker.core.resources` Endpoint or
        InferenceComponent, with the session and region it was fetched with."""
        from .bridge.sagemaker_sdk import from_sagemaker

        return from_sagemaker(cls, resource, aws)

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()


# Moved with the client (CHANGELOG.md): old name -> (its home, what to use now).
_MOVED = {
    "deploy": "sm_peagle.deploy (or a client's deploy)",
    "plan": "sm_peagle.plan (or a client's plan)",
    "plan_for": "sm_peagle.plan",
    "Deployment": "sm_peagle.Deployment",
}


def __getattr__(name: str) -> Any:
    """`sm_peagle.endpoint.deploy`, `.plan`, `.plan_for` and `.Deployment`, for one release
    (a FutureWarning naming the new home)."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    old = "sm_peagle.plan_for" if name == "plan_for" else f"sm_peagle.endpoint.{name}"
    warnings.warn(
        f"{old} is deprecated, use {_MOVED[name]} (removed in the next release)",
        FutureWarning,
        stacklevel=2,
    )
    from .ops import deployment

    if name == "Deployment":
        return deployment.Deployment
    if name == "deploy":
        return _old_deploy
    return deployment.DeployOps().plan


def _old_deploy(
    spec_or_model: Any,
    *,
    aws: Any = None,
    say: Callable[[str], None] | None = None,
    on_connect: Callable[[Any], None] | None = None,
    on_poll: Callable[[Any], None] | None = None,
    **options: Any,
) -> Endpoint:
    """`deploy` as it was called here: the session keywords per call."""
    from .ops.deployment import DeployOps

    class _Deployer(DeployOps):
        def endpoint(self, name: str) -> Endpoint:
            return Endpoint(name, aws=aws, region=self.region, say=say)

    session = _Deployer(aws=aws, progress=say, on_connect=on_connect, on_poll=on_poll)
    return session.deploy(spec_or_model, **options)
