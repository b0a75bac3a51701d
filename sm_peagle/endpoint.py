"""The Python API: `sm_peagle.deploy(...)` and the `Endpoint` handle.

The SDK is the product; the CLI is a skin over these calls.

    with sm_peagle.deploy("gpt-oss-20b", k=5, role=ROLE) as ep:
        print(ep.status()["status"])
    # the endpoint, its config and model are deleted here, even on an exception
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .lifecycle.spec_tags import deployed_spec
from .planning.spec_loading import spec_from_data
from .planning.spec_options import spec_from_options
from .planning.specs import DeploymentSpec

__all__ = ["Endpoint", "deploy", "plan_for", "deployed_spec"]

if TYPE_CHECKING:  # annotations only
    from .lifecycle.adopt import AdoptResult


def _aws(region: str | None, aws: Any) -> Any:
    if aws is not None:
        return aws
    from .aws import AwsContext

    return AwsContext(region)


def plan_for(spec_or_model: DeploymentSpec | str | dict | Path, **overrides: Any) -> Any:
    """Resolve and plan, as `peagle plan` does. `spec_or_model`: a spec, a dict, a spec
    file path, or a catalog alias / JumpStart id; `overrides`: k=, mode=, role=, …"""
    from .lifecycle.resolve import plan_resolved

    if isinstance(spec_or_model, DeploymentSpec):
        spec = spec_or_model
        if overrides:
            base = spec_or_model.model_dump(mode="json", exclude_unset=True)
            spec = spec_from_options(base=base, **overrides)
    elif isinstance(spec_or_model, dict):
        spec = spec_from_options(base=spec_or_model, **overrides)
    elif isinstance(spec_or_model, Path) or str(spec_or_model).endswith((".yaml", ".yml", ".json")):
        spec = spec_from_options(None, spec_or_model, **overrides)
    else:
        spec = spec_from_options(str(spec_or_model), None, **overrides)
    return plan_resolved(spec)


def with_push_bucket(p: Any, aws: Any) -> Any:
    """A local head is pushed to `sagemaker-<region>-<account>` unless a bucket is given;
    the account is only known with credentials, so deploy re-plans with it here."""
    if not p.drafter_push or p.spec.drafter.bucket:
        return p
    from .planning.spec_loading import merge_overrides

    bucket = f"sagemaker-{p.region}-{aws.account_id()}"
    data = p.spec.model_dump(mode="json", exclude_unset=True)
    return plan_for(spec_from_data(merge_overrides(data, {"drafter.bucket": bucket})))


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
        from .lifecycle.adopt import adopt

        ep = cls(name, aws=aws, region=region, say=say)
        ep.adoption = adopt(
            ep.aws,
            name,
            model=model,
            dry_run=dry_run,
            accept_differences=accept_differences,
            say=ep._say,
        )
        ep.plan = ep.adoption.plan
        return ep

    def lifecycle(self, **kw: Any) -> Any:
        from .lifecycle.manager import Lifecycle

        return Lifecycle(self.aws, say=self._say, **kw)

    def status(self) -> dict[str, Any]:
        from .lifecycle.inventory import endpoint_status

        return endpoint_status(
            self.aws.client("sagemaker"), self.name, aas=self.aws.client("application-autoscaling")
        )

    def wait(self, timeout: float = 8100, **kw: Any) -> dict[str, Any]:
        from .lifecycle.waiter import wait_for_endpoint

        return wait_for_endpoint(self.aws.client("sagemaker"), self.name, timeout=timeout, **kw)

    def delete(self, *, keep_model: bool = False) -> dict[str, Any]:
        return self.lifecycle().delete(self.name, keep_model=keep_model)

    def spec(self) -> DeploymentSpec:
        return deployed_spec(self.aws.client("sagemaker"), self.name)

    def update(
        self, *, timeout: float | None = None, component: str | None = None, **overrides: Any
    ) -> dict[str, Any]:
        """Redeploy with changed options (k=, mode=, instance_type=, …) in place. On an
        endpoint hosting inference components K and mode are per component: name it,
        `update(component="p-eagle", k=5)` (k= and mode= only); without `component`, k=
        or mode= there is a SpecError naming the components. Nothing changes on error."""
        from .planning.component_change import refuse_top_level_change

        if component is not None:
            from .errors import SpecError
            from .lifecycle.component_update import plan_component_change

            extra = sorted(set(overrides) - {"k", "mode"})
            if extra:
                raise SpecError(f"update(component=...) takes k= and mode= only (got {extra})")
            sm = self.aws.client("sagemaker")
            k, mode = overrides.get("k"), overrides.get("mode")
            change = plan_component_change(sm, self.name, component, k=k, mode=mode)
            result, new = change.apply(self.lifecycle(), timeout=timeout), change.plan
        else:
            current = self.spec()
            refuse_top_level_change(
                current, self.name, k=overrides.get("k"), mode=overrides.get("mode"), sdk=True
            )
            new = plan_for(current, **{**overrides, "name": self.name})
            result = self.lifecycle().update(new, timeout=timeout)
        self.plan = new
        return {
            "endpoint": self.name,
            "status": result.status,
            "created": [n for _, n in result.created],
        }

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
        self, *, since: float = 600, follow: bool = False, component: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The endpoint's CloudWatch log events, or with `component` that inference
        component's (its own log group)."""
        from .lifecycle.endpoint_logs import fetch_log_events, follow_log_events

        ic = self.inference_component(component) if component is not None else None
        if follow:
            return follow_log_events(self.aws, self.name, since=since, component=ic)
        return iter(fetch_log_events(self.aws, self.name, since=since, component=ic))

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
        from .ops.measure import bench

        for old, new in (("duration_s", "duration"), ("acceptance_wait_s", "acceptance_wait"),
                         ("rates", "rate")):  # fmt: skip
            if old in options:
                options[new] = options.pop(old)
        if options.get("rate") in ([None], (None,)):
            options["rate"] = None
        options.setdefault("say", self._say)
        return bench(self, component=component, **options)

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
    spec_or_model: DeploymentSpec | str | dict | Path,
    *,
    wait: bool = True,
    timeout: float | None = None,
    keep_on_failure: bool = False,
    aws: Any = None,
    say: Callable[[str], None] | None = None,
    on_poll: Callable[[Any], None] | None = None,
    **overrides: Any,
) -> Endpoint:
    """Plan, preflight, create and (by default) wait. Returns an Endpoint handle.

    Raises PreflightFailed / QuotaExceeded (nothing created), DeploymentFailed /
    DeploymentTimeout (everything rolled back unless keep_on_failure)."""
    from .lifecycle.manager import Lifecycle

    p = plan_for(spec_or_model, **overrides)
    p.raise_for_failures()
    ctx = _aws(p.region, aws)
    p = with_push_bucket(p, ctx)
    Lifecycle(ctx, say=say or (lambda _m: None)).apply(
        p, wait=wait, timeout=timeout, keep_on_failure=keep_on_failure, on_poll=on_poll
    )
    return Endpoint(p.names["endpoint"], aws=ctx, say=say, plan=p)
