"""Deploy in one place: a spec (or a model and the spec options) becomes a plan, the plan
is re-planned for the account when a local drafter head is pushed, preflighted and
created. `plan` and `deploy` are methods of `sm_peagle.Client` (`DeployOps`), and so are `diff` and
`apply`, which bring an endpoint to a spec file (create, update in place, or nothing)
along the same path; the module-level `sm_peagle.plan`, `sm_peagle.deploy`, … are the
default client's.

    client = sm_peagle.Client(region="us-east-1")
    p = client.plan("gpt-oss-20b", k=5)        # the exact requests, and the checks
    ep = client.deploy("gpt-oss-20b", k=5)     # an Endpoint handle, `.deployment` says what

Every spec option (`SpecOptions`, `sm_peagle.planning.spec.options`) is a typed keyword
of both. The region: a client made with a region deploys there (a spec or `region=`
naming another is a SpecError naming both); a client without one deploys where the spec
says, else where the environment says (AWS_REGION, the profile).

Preflight (quotas, the role, the image, S3 heads) and the create-wait-roll-back cycle
are `Lifecycle.apply` (sm_peagle.lifecycle.manager), which this module drives.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Call, Param, Phrase, SpecError, text
from ..planning.spec.options import documents_spec_options
from .session import Say, Session, quiet, seconds

if TYPE_CHECKING:
    from ..endpoint import Endpoint
    from ..lifecycle.apply import ApplyPlan
    from ..planning.plan_result import Plan
    from ..planning.spec.model import DeploymentSpec
    from ..planning.spec.options import SpecOptions
    from ..planning.spec.rollout_spec import RolloutSpec

__all__ = ["ApplyResult", "DeployOps", "Deployment", "refuse_target_only"]

Confirm = Callable[[str], None]


@dataclass(frozen=True)
class Deployment:
    """What `deploy` did (`Endpoint.deployment`); `to_dict()` is the `peagle deploy --json`
    document.

    Attributes:
        endpoint: the endpoint's name.
        status: the status it reached ("InService"; "Creating" with `wait=False`).
        created: (kind, name) of each resource created: model, endpoint config, endpoint,
            and an inference component's or a scaling policy's when there are any.
        elapsed_seconds: how long the deploy took.
        region: the region it was deployed in.
        speculative_config: the speculative config vLLM runs with (None: baseline).
    """

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


@dataclass(frozen=True)
class ApplyResult:
    """What `apply` did; `to_dict()` is the `peagle apply --json` document.

    Attributes:
        diff: The comparison of the spec with what runs (`diff`'s result).
        applied: Whether anything was asked of SageMaker.
        status: The endpoint's status after, when applied; else None.
    """

    diff: ApplyPlan
    applied: bool
    status: str | None = None

    @property
    def action(self) -> str:
        """What apply decided: the diff's action, "create", "update" or "noop"."""
        return self.diff.action

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle apply --json` prints: the diff, whether it was applied, and the
        endpoint's status when it was."""
        doc = {**self.diff.to_dict(), "applied": self.applied}
        if self.applied:
            doc["status"] = self.status
        return doc


def refuse_target_only(model: str | None, *, say: Say | None = None) -> None:
    """A model a plugin contributes (`ModelEntry.served_by`) deploys only onto the plugin
    target that serves it: its weights exist nowhere else. Anywhere else: SpecError, before
    any request, whose remedy is that target's run (`Phrase("local_run")`). On it: `say`
    which engine serves it."""
    from .. import plugins
    from ..catalog.models import find_model

    entry = find_model(model) if model else None
    if entry is None or entry.served_by is None:
        return
    where = entry.served_by
    state = plugins.current_target()
    if state is not None and state.name == where:
        (say or quiet)(
            f"{entry.alias}: a {where}-only model, served by the {where}'s "
            f"{state.engine or 'own'} engine"
        )
        return
    raise SpecError(
        f"{entry.alias} is a {where}-only model: its weights exist only on the {where} "
        "plugin's target, not on AWS",
        field="model",
        value=entry.alias,
        remedy=text("deploy it on that target: {s}", s=Phrase("local_run")),
    )


class DeployOps(Session):
    """Plan, deploy, diff and apply (methods of `sm_peagle.Client`)."""

    @documents_spec_options
    def plan(
        self,
        spec_or_model: DeploymentSpec | str | dict | Path,
        *,
        instance_type: str | None = None,
        instance_count: int | None = None,
        mode: str | None = None,
        k: int | None = None,
        k_schedule: str | None = None,
        drafter: str | None = None,
        bucket: str | None = None,
        fallback: list[str] | None = None,
        autoscale: str | None = None,
        autoscale_min: int | None = None,
        autoscale_max: int | None = None,
        target_concurrency: float | None = None,
        target_invocations: float | None = None,
        model_data: str | None = None,
        image: str | None = None,
        vllm_version: str | None = None,
        name: str | None = None,
        routing_strategy: str | None = None,
        role: str | None = None,
        region: str | None = None,
        hosting: str | None = None,
        components: list[str] | None = None,
        scale_to_zero: bool | None = None,
        copies: int | None = None,
        accelerators_per_copy: int | None = None,
        min_instances: int | None = None,
        max_instances: int | None = None,
        scale_in_strategy: str | None = None,
        scale_in_max_step: int | None = None,
        scale_in_cooldown_minutes: int | None = None,
        monitor: bool | None = None,
        rollout: str | Mapping[str, Any] | RolloutSpec | None = None,
        bake: str | float | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
        allow_live: bool | None = None,
        jumpstart_spec: dict | None = None,
        jumpstart_source: str | None = None,
        strict: bool = False,
    ) -> Plan:
        """Resolve and plan, as `peagle plan` does: the exact requests a deployment would
        send, and its checks. Sends nothing (a JumpStart spec may be read, see
        `allow_live`).

        Args:
            spec_or_model: a DeploymentSpec, a dict, a spec file path, or a catalog alias /
                JumpStart id.
            allow_live: read the JumpStart spec from S3 when it is neither bundled nor
                cached (None: when credentials look present).
            jumpstart_spec: plan from this JumpStart spec, with no lookup at all.
            jumpstart_source: where `jumpstart_spec` came from, for the plan's summary.
            strict: turn every warning into a failure (`Plan.raise_for_failures`).

        Returns:
            The Plan: `.create_model`, `.create_endpoint_config`, … (the requests),
            `.checks`, `.price`; `.raise_for_failures()` raises CheckFailed.

        Raises:
            SpecError: a bad option or spec (`.field` names it), an unknown model, or a
                `region` other than the client's.
        """
        from ..lifecycle.resolve import plan as resolve_plan
        from ..planning.spec.options import options_from

        spec = self._spec(spec_or_model, options_from(locals()))
        return resolve_plan(
            spec,
            allow_live=allow_live,
            jumpstart_spec=jumpstart_spec,
            jumpstart_source=jumpstart_source,
            strict=strict,
        )

    @documents_spec_options
    def deploy(
        self,
        spec_or_model: DeploymentSpec | str | dict | Path | Plan,
        *,
        instance_type: str | None = None,
        instance_count: int | None = None,
        mode: str | None = None,
        k: int | None = None,
        k_schedule: str | None = None,
        drafter: str | None = None,
        bucket: str | None = None,
        fallback: list[str] | None = None,
        autoscale: str | None = None,
        autoscale_min: int | None = None,
        autoscale_max: int | None = None,
        target_concurrency: float | None = None,
        target_invocations: float | None = None,
        model_data: str | None = None,
        image: str | None = None,
        vllm_version: str | None = None,
        name: str | None = None,
        routing_strategy: str | None = None,
        role: str | None = None,
        region: str | None = None,
        hosting: str | None = None,
        components: list[str] | None = None,
        scale_to_zero: bool | None = None,
        copies: int | None = None,
        accelerators_per_copy: int | None = None,
        min_instances: int | None = None,
        max_instances: int | None = None,
        scale_in_strategy: str | None = None,
        scale_in_max_step: int | None = None,
        scale_in_cooldown_minutes: int | None = None,
        monitor: bool | None = None,
        rollout: str | Mapping[str, Any] | RolloutSpec | None = None,
        bake: str | float | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
        wait: bool = True,
        timeout: str | float | None = None,
        keep_on_failure: bool = False,
        confirm: Confirm | None = None,
        strict: bool = False,
    ) -> Endpoint:
        """Plan, preflight, create and (by default) wait until InService; a failure rolls
        everything back.

        Args:
            spec_or_model: as for `plan`, or a Plan it returned (re-planned when spec
                options are given).
            wait: wait until the endpoint is InService (False: return once created).
            timeout: give up waiting after this long: "2h", "90m" or seconds (default:
                the download and health-check timeouts plus 15 minutes).
            keep_on_failure: keep the resources of a failed deploy (to read their logs).
            confirm: asked with the instances and the price before anything is created;
                it raises to stop.
            strict: refuse a plan with a warning as one with a failure.

        Returns:
            An Endpoint handle on the new endpoint; `.deployment` (a Deployment) says what
            was created and the status reached, `.plan` is the plan it was made from.

        Raises:
            SpecError: a bad option, or a model a plugin target serves, outside it (nothing
                sent).
            CheckFailed: a failed check (nothing sent).
            PreflightFailed, QuotaExceeded: refused before anything was created.
            DeploymentFailed, DeploymentTimeout: everything was rolled back unless
                `keep_on_failure`.
        """
        from ..lifecycle.manager import Lifecycle
        from ..planning.plan_result import variant_instance_types
        from ..planning.spec.options import options_from

        wait_s = seconds(timeout, "timeout")
        session, ctx, p = self._planned_on_aws(spec_or_model, options_from(locals()), strict=strict)
        if confirm is not None:
            # The price with its region and source, or "unknown in R (why)": asked before paying.
            price = p.price.label if p.price else "an unknown price"
            v = p.create_endpoint_config["ProductionVariants"][0]
            confirm(
                f"Create {p.names['endpoint']} on {v['InitialInstanceCount']} x "
                f"{' or '.join(variant_instance_types(v))} ({price})?"
            )
        result = Lifecycle(ctx, say=self._say).apply(
            p, wait=wait, timeout=wait_s, keep_on_failure=keep_on_failure, on_poll=self.on_poll
        )
        # The handle is the client's (`Client.endpoint`): ops/ never imports endpoint.py.
        ep = session.endpoint(p.names["endpoint"])  # type: ignore[attr-defined]
        ep.plan = p
        ep.deployment = Deployment(
            result.endpoint,
            result.status,
            list(result.created),
            result.elapsed,
            p.region,
            p.speculative_config,
        )
        return ep

    # -- a spec file in git: diff and apply ----------------------------------------------

    @documents_spec_options
    def diff(
        self,
        spec_or_path: DeploymentSpec | str | dict | Path,
        *,
        instance_type: str | None = None,
        instance_count: int | None = None,
        mode: str | None = None,
        k: int | None = None,
        k_schedule: str | None = None,
        drafter: str | None = None,
        bucket: str | None = None,
        fallback: list[str] | None = None,
        autoscale: str | None = None,
        autoscale_min: int | None = None,
        autoscale_max: int | None = None,
        target_concurrency: float | None = None,
        target_invocations: float | None = None,
        model_data: str | None = None,
        image: str | None = None,
        vllm_version: str | None = None,
        name: str | None = None,
        routing_strategy: str | None = None,
        role: str | None = None,
        region: str | None = None,
        hosting: str | None = None,
        components: list[str] | None = None,
        scale_to_zero: bool | None = None,
        copies: int | None = None,
        accelerators_per_copy: int | None = None,
        min_instances: int | None = None,
        max_instances: int | None = None,
        scale_in_strategy: str | None = None,
        scale_in_max_step: int | None = None,
        scale_in_cooldown_minutes: int | None = None,
        monitor: bool | None = None,
        rollout: str | Mapping[str, Any] | RolloutSpec | None = None,
        bake: str | float | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
    ) -> ApplyPlan:
        """How the live endpoint differs from the spec; changes nothing. "noop" when the
        spec sends the requests the deployed one sends (defaults filled in), however it
        is written; read from the endpoint's own tags.

        Args:
            spec_or_path: a spec file path, a dict or a DeploymentSpec.

        Returns:
            An ApplyPlan: `.action` is "create", "update" or "noop", with `.spec_changes`
            and `.request_changes`.

        Raises:
            SpecError: a bad spec or option (`.field` names it).
            CheckFailed: the spec's plan fails a check.
        """
        from ..planning.spec.options import options_from

        return self._compare(spec_or_path, options_from(locals()))[1]

    @documents_spec_options
    def apply(
        self,
        spec_or_path: DeploymentSpec | str | dict | Path,
        *,
        instance_type: str | None = None,
        instance_count: int | None = None,
        mode: str | None = None,
        k: int | None = None,
        k_schedule: str | None = None,
        drafter: str | None = None,
        bucket: str | None = None,
        fallback: list[str] | None = None,
        autoscale: str | None = None,
        autoscale_min: int | None = None,
        autoscale_max: int | None = None,
        target_concurrency: float | None = None,
        target_invocations: float | None = None,
        model_data: str | None = None,
        image: str | None = None,
        vllm_version: str | None = None,
        name: str | None = None,
        routing_strategy: str | None = None,
        role: str | None = None,
        region: str | None = None,
        hosting: str | None = None,
        components: list[str] | None = None,
        scale_to_zero: bool | None = None,
        copies: int | None = None,
        accelerators_per_copy: int | None = None,
        min_instances: int | None = None,
        max_instances: int | None = None,
        scale_in_strategy: str | None = None,
        scale_in_max_step: int | None = None,
        scale_in_cooldown_minutes: int | None = None,
        monitor: bool | None = None,
        rollout: str | Mapping[str, Any] | RolloutSpec | None = None,
        bake: str | float | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
        dry_run: bool = False,
        timeout: str | float | None = None,
        confirm: Confirm | None = None,
        on_diff: Callable[[ApplyPlan], None] | None = None,
        strict: bool = False,
    ) -> ApplyResult:
        """Make the endpoint match the spec: create it, update it in place, or do nothing.

        Args:
            spec_or_path: a spec file path, a dict or a DeploymentSpec.
            dry_run: compare only; nothing changes.
            timeout: give up waiting after this long: "2h", "90m" or seconds.
            confirm: asked before anything changes; it raises to stop.
            on_diff: sees the comparison first (as `diff` returns it).
            strict: refuse a plan with a warning as one with a failure.

        Returns:
            An ApplyResult: `.diff`, `.action`, `.applied`, `.status`.

        Raises:
            SpecError: a bad spec or option, a model a plugin target serves, outside it, or
                an endpoint deployed under another name (a CloudFormation stack's).
            CheckFailed: the spec's plan fails a check (nothing sent).
            DeploymentFailed, DeploymentTimeout: creating or updating failed.
        """
        from ..lifecycle.expiry_update import follow_ttl
        from ..lifecycle.manager import Lifecycle
        from ..planning.spec.options import options_from

        wait_s = seconds(timeout, "timeout")
        ctx, ap = self._compare(
            spec_or_path, options_from(locals()), refuse_plugin_models=not dry_run, strict=strict
        )
        if on_diff is not None:
            on_diff(ap)
        if ap.action == "noop":
            self._say(f"no changes: {ap.endpoint} already matches the spec")
        if ap.rollout_note and not ap.new_config:
            self._say(ap.rollout_note)
        lc = Lifecycle(ctx, say=self._say)
        if dry_run or ap.action == "noop":  # an expiry the endpoint lacks: schedule + tag
            return ApplyResult(ap, applied=follow_ttl(lc, ap.plan, ap.live_name, dry_run, confirm))
        if ap.live_name is not None:
            raise SpecError(  # updating would create the plan's name beside it
                f"{ap.live_name} is deployment {ap.plan.names['endpoint']} under another name "
                "(made by a CloudFormation stack?); apply updates endpoints by the plan's name",
                remedy=text(
                    "update the stack with a fresh `{e}`",
                    e=Call("export", format="cloudformation"),
                ),
            )
        if confirm is not None:
            confirm(f"{ap.action.capitalize()} {ap.plan.names['endpoint']}?")
        if ap.action == "create":
            result = lc.apply(ap.plan, timeout=wait_s, on_poll=self.on_poll)
        elif ap.monitoring_only:  # CloudWatch only: nothing is sent to SageMaker
            lc.follow_monitoring(ap.plan, ap.monitoring)
            status = lc.sm.describe_endpoint(EndpointName=ap.endpoint)["EndpointStatus"]
            return ApplyResult(ap, applied=True, status=status)
        else:
            result = lc.update(
                ap.plan, timeout=wait_s, on_poll=self.on_poll, monitoring=ap.monitoring
            )
        return ApplyResult(ap, applied=True, status=result.status)

    def _compare(
        self,
        spec_or_path: Any,
        options: SpecOptions,
        *,
        refuse_plugin_models: bool = False,
        strict: bool = False,
    ) -> tuple[Any, ApplyPlan]:
        from ..lifecycle.apply import compare

        _, ctx, p = self._planned_on_aws(
            spec_or_path, options, refuse_plugin_models=refuse_plugin_models, strict=strict
        )
        return ctx, compare(p, ctx)

    # -- the steps deploy, apply and diff share -------------------------------------------

    def _spec(self, spec_or_model: Any, options: SpecOptions) -> DeploymentSpec:
        """`spec_or_model` with the options given, in the client's region: a spec without
        one gets it; a spec (or `region=`) naming another is a SpecError naming both."""
        import dataclasses

        from ..lifecycle.resolve import to_spec

        spec = to_spec(spec_or_model, options)
        if self.region is None:
            return spec
        if spec.region is None:
            return to_spec(spec, dataclasses.replace(options, region=self.region))
        _same_region(spec.region, self.region)
        return spec

    def _at(self, region: str | None) -> DeployOps:
        """This client, or one like it for `region` when this one has neither a region nor
        an AWS context of its own (the default client: the plan's region decides)."""
        if self._aws is not None or self.region is not None or region is None:
            return self
        other = copy.copy(self)  # the same profile, callbacks and target, in `region`
        other.region = region
        return other

    def _planned_on_aws(
        self,
        spec_or_model: Any,
        options: SpecOptions,
        *,
        refuse_plugin_models: bool = True,
        strict: bool = False,
    ) -> tuple[DeployOps, Any, Plan]:
        """The one way a spec becomes a plan AWS is about to receive (deploy, apply, diff):
        a plugin target's model refused off it before planning (a JumpStart lookup is a
        request too), the plan's checks passed (CheckFailed, nothing sent; with `strict`,
        warnings too), then the AWS context (`on_connect` sees it), and a local head's push
        bucket, which needs the account. Returns the client for the plan's region, the
        context, the plan."""
        from ..lifecycle.resolve import plan as resolve_plan
        from ..planning.plan_result import Plan as PlanType
        from ..planning.spec.options import SpecOptions
        from ..planning.steps.drafter_checks import strict_checks

        if isinstance(spec_or_model, PlanType):
            if refuse_plugin_models:
                refuse_target_only(spec_or_model.spec.model, say=self._say)
            if options != SpecOptions():
                p = resolve_plan(self._spec(spec_or_model.spec, options))
            else:
                if self.region is not None:
                    _same_region(spec_or_model.region, self.region)
                p = spec_or_model
        else:
            spec = self._spec(spec_or_model, options)
            if refuse_plugin_models:
                refuse_target_only(spec.model, say=self._say)
            p = resolve_plan(spec)
        if strict:  # what the plan could not read (a head in S3) preflight reads strictly too
            p.checks, p.strict = strict_checks(p.checks), True
        p.raise_for_failures()
        session = self._at(p.region)
        ctx = session._connect()
        return session, ctx, _with_push_bucket(p, ctx)


def _same_region(spec_region: str, client_region: str) -> None:
    if spec_region != client_region:
        raise SpecError(
            text(
                "{region}: the spec deploys to {spec!r}, but this client's region is {client!r}",
                spec=spec_region,
                client=client_region,
            ),
            field="region",
            value=spec_region,
            rule="the client's region",
            remedy=text(
                "give {region} (or a spec region) equal to the client's, or use a client "
                "for {spec!r}",
                region=Param("region", client_region),
                spec=spec_region,
            ),
        )


def _with_push_bucket(p: Plan, ctx: Any) -> Plan:
    """A local head is pushed to `sagemaker-<region>-<account>` unless a bucket is given;
    the account is only known with credentials, so deploy re-plans with it here."""
    if not p.drafter_push or p.spec.drafter.bucket:
        return p
    from ..lifecycle.resolve import plan as resolve_plan
    from ..planning.spec.loading import merge_overrides, spec_from_data

    bucket = f"sagemaker-{p.region}-{ctx.account_id()}"
    data = p.spec.model_dump(mode="json", exclude_unset=True)
    # Re-planned: a plan made strict stays strict (preflight reads its S3 heads so).
    spec = spec_from_data(merge_overrides(data, {"drafter.bucket": bucket}))
    return resolve_plan(spec, strict=p.strict)
