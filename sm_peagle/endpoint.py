"""The Python API: `sm_peagle.deploy(...)` and the `Endpoint` handle.

The SDK is the product; the CLI is a skin over these calls.

    with sm_peagle.deploy("gpt-oss-20b", k=5, role=ROLE) as ep:
        print(ep.status()["status"])
    # the endpoint, its config and model are deleted here, even on an exception
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .lifecycle.resolve import plan
from .lifecycle.spec_tags import deployed_spec
from .planning.plan_result import Plan
from .planning.spec.model import DeploymentSpec

__all__ = ["Deployment", "Endpoint", "deploy", "deployed_spec", "plan", "plan_for"]

if TYPE_CHECKING:  # annotations only
    from .lifecycle.adopt import AdoptResult
    from .ops.changes import UpdateResult
    from .ops.endpoints import DeleteResult, EndpointStatus, LogStream


def _aws(region: str | None, aws: Any) -> Any:
    if aws is not None:
        return aws
    from .aws import AwsContext

    return AwsContext(region)


@dataclass
class Deployment:
    """What `deploy` did (`Endpoint.deployment`): the `peagle deploy --json` document."""

    endpoint: str
    status: str
    created: list[tuple[str, str]]
    elapsed_seconds: float
    region: str
    speculative_config: dict | None

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle deploy --json` prints."""
        return {
            "endpoint": self.endpoint,
            "status": self.status,
            "created": [{"kind": k, "name": n} for k, n in self.created],
            "elapsed_seconds": round(self.elapsed_seconds, 1),
            "region": self.region,
            "speculative_config": self.speculative_config,
        }


class Endpoint:
    """A handle on one SageMaker endpoint."""

    def __init__(
        self,
        name: str,
        *,
        aws: Any = None,
        region: str | None = None,
        say: Callable[[str], None] | None = None,
        plan: Any = None,
    ) -> None:
        self.name = name
        self.aws = _aws(region, aws)
        self.plan = plan
        self._say = say or (lambda _m: None)

    def __repr__(self) -> str:
        return f"Endpoint({self.name!r})"

    @classmethod
    def attach(cls, name: str, *, region: str | None = None, aws: Any = None) -> Endpoint:
        """A handle on an existing endpoint; NotFound if there is none."""
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
        region: str | None = None,
        aws: Any = None,
        say: Callable[[str], None] | None = None,
    ) -> Endpoint:
        """Take an endpoint made elsewhere under peagle's management (`peagle adopt`):
        its reconstructed spec, checks and differences are in `.adoption` (`.spec`,
        `.checks`, `.differences`); with `dry_run` nothing is tagged. SpecError (nothing
        tagged) for what peagle cannot represent (fields its spec cannot carry unless
        `accept_differences`), an endpoint not settled InService, one sharing its config
        or model with another endpoint, or one it already manages; NotFound if none."""
        from .ops.changes import adopt

        ep = cls(name, aws=aws, region=region, say=say)
        ep.adoption = adopt(
            name,
            model=model,
            dry_run=dry_run,
            accept_differences=accept_differences,
            aws=ep.aws,
            say=ep._say,
        )
        ep.plan = ep.adoption.plan
        return ep

    def lifecycle(self, **kw: Any) -> Any:
        """The lower-level `Lifecycle` (create, wait, roll back, update, delete) on this endpoint's
        AWS context; `deploy`, `update` and `delete` are the supported entry points."""
        from .lifecycle.manager import Lifecycle

        return Lifecycle(self.aws, say=self._say, **kw)

    def status(self) -> EndpointStatus:
        """`sm_peagle.status(name)` for this endpoint (a dict with attributes too)."""
        from .ops.endpoints import status

        return status(self.name, aws=self.aws)

    def wait(self, timeout: float = 8100, **kw: Any) -> dict[str, Any]:
        """Poll DescribeEndpoint until the endpoint is InService (or `wanted=`) and return the last
        description; DeploymentFailed when it fails, DeploymentTimeout after `timeout` seconds,
        NotFound when it is deleted meanwhile."""
        from .lifecycle.waiter import wait_for_endpoint

        return wait_for_endpoint(self.aws.client("sagemaker"), self.name, timeout=timeout, **kw)

    def delete(self, *, keep_model: bool = False, force: bool = False) -> DeleteResult:
        """`sm_peagle.delete(name)` for this endpoint."""
        from .ops.endpoints import delete

        return delete(self.name, keep_model=keep_model, force=force, aws=self.aws, say=self._say)

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
        from .ops.changes import update

        result = update(
            self.name,
            k=k,
            mode=mode,
            instance_type=instance_type,
            instance_count=instance_count,
            component=component,
            copies=copies,
            timeout=timeout,
            aws=self.aws,
            say=self._say,
            on_poll=on_poll,
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
        """`sm_peagle.logs(name, ...)` for this endpoint: its CloudWatch log events, or
        with `component` that inference component's; `since` "5m", "2h" or seconds."""
        from .ops.endpoints import logs

        return logs(self.name, since=since, follow=follow, component=component, aws=self.aws)

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
        (`r["levels"]`; `r.to_dict()`). `concurrency=2`, `[1, 4]` or `"1,4"`; every
        option is checked before any request (SpecError). `component`: the inference
        component to benchmark (checked before any traffic). The older spellings
        `duration_s=`, `acceptance_wait_s=` and `rates=` still work."""
        from .ops.measure import MeasureOps

        for old, new in (("duration_s", "duration"), ("acceptance_wait_s", "acceptance_wait"),
                         ("rates", "rate")):  # fmt: skip
            if old in options:
                options[new] = options.pop(old)
        if options.get("rate") in ([None], (None,)):
            options["rate"] = None
        say = options.pop("say", self._say)  # this handle's session, its progress lines
        return MeasureOps(aws=self.aws, progress=say).bench(self, component=component, **options)

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


def deploy(
    spec_or_model: DeploymentSpec | str | dict | Path | Plan,
    *,
    wait: bool = True,
    timeout: str | float | None = None,
    keep_on_failure: bool = False,
    aws: Any = None,
    say: Callable[[str], None] | None = None,
    on_poll: Callable[[Any], None] | None = None,
    confirm: Callable[[str], None] | None = None,
    on_connect: Callable[[Any], None] | None = None,
    strict: bool = False,
    **overrides: Any,
) -> Endpoint:
    """Plan, preflight, create and (by default) wait. Returns an Endpoint handle, with
    what was done in `.deployment`.

    `spec_or_model`: as for `plan`, or a Plan it returned; `overrides`: k=, mode=, ….
    `timeout`: "2h", "90m" or seconds. `confirm` is asked (with the instances and price)
    before anything is created; `on_connect` sees the AWS context before the first request.
    `strict=True` (`--strict`) refuses a plan with a warning as one with a failure.
    Raises SpecError for a sandbox-only model outside the sandbox and CheckFailed for a
    failed check (nothing sent), PreflightFailed / QuotaExceeded (nothing created),
    DeploymentFailed / DeploymentTimeout (everything rolled back unless keep_on_failure)."""
    from .lifecycle.manager import Lifecycle
    from .ops.changes import planned_on_aws
    from .ops.session import seconds
    from .planning.plan_result import variant_instance_types

    wait_s = seconds(timeout, "timeout")
    ctx, p = planned_on_aws(spec_or_model, overrides, aws, on_connect, say=say, strict=strict)
    if confirm is not None:
        # The price with its region and source, or "unknown in R (why)": asked before paying.
        price = p.price.label if p.price else "an unknown price"
        v = p.create_endpoint_config["ProductionVariants"][0]
        confirm(
            f"Create {p.names['endpoint']} on {v['InitialInstanceCount']} x "
            f"{' or '.join(variant_instance_types(v))} ({price})?"
        )
    result = Lifecycle(ctx, say=say or (lambda _m: None)).apply(
        p, wait=wait, timeout=wait_s, keep_on_failure=keep_on_failure, on_poll=on_poll
    )
    ep = Endpoint(p.names["endpoint"], aws=ctx, say=say, plan=p)
    ep.deployment = Deployment(
        result.endpoint,
        result.status,
        list(result.created),
        result.elapsed,
        p.region,
        p.speculative_config,
    )
    return ep


def plan_for(spec_or_model: DeploymentSpec | str | dict | Path, **overrides: Any) -> Plan:
    """Deprecated: `sm_peagle.plan`, the one name for "resolve and plan" (CHANGELOG.md)."""
    import warnings

    warnings.warn(
        "sm_peagle.plan_for is deprecated, use sm_peagle.plan (removed in the next release)",
        FutureWarning,
        stacklevel=2,
    )
    return plan(spec_or_model, **overrides)
