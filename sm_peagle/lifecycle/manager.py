"""The only code that creates or deletes SageMaker resources.

apply: preflight -> model -> endpoint config -> endpoint -> wait. On Failed, timeout,
Ctrl-C or any error, everything this run created is deleted newest first and verified
gone, unless the caller asked to keep it. Every resource is tagged peagle:managed so
`peagle gc` can find what an interrupted rollback left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import settings
from ..errors import DeploymentFailed
from ..planning.plan_result import Plan
from .resources import KINDS, DeployResult, as_error, models_of, not_found, tagged_requests
from .waiter import WaitState, default_timeout, wait_for_endpoint


@dataclass
class Deletion:
    """What deleting an endpoint removes, in order, and what it keeps (and why)."""

    endpoint: str
    described: dict[str, Any] | None  # DescribeEndpoint's answer; None: the endpoint is gone
    components: list[str]  # inference components, deleted first
    configs: list[str]
    models: list[str]
    kept_models: list[str]  # keep_model
    kept_shared: dict[str, list[str]]  # config/model -> the endpoints still using it
    kept_component_models: list[str]  # named by components peagle did not create

    @property
    def endpoint_exists(self) -> bool:
        return self.described is not None

    def to_dict(self) -> dict[str, Any]:
        ep = [self.endpoint] if self.endpoint_exists else []
        return {
            "endpoint": self.endpoint,
            "would_delete": [*self.components, *ep, *self.configs, *self.models],
            "kept_models": self.kept_models,
            "kept_shared": self.kept_shared,
        }

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _cleanup(
    created: list[tuple[str, str]], left: list[str] | None, deployment: str | None
) -> str:
    """The command that removes what a rollback left (`left` None: all this run created).
    For a deploy, `peagle delete` of the deployment: it removes the endpoint if there is
    one and the configs and models tagged with that deployment either way, nothing else.
    For an update (the endpoint lives on), gc with --min-age 0, as what is left is
    minutes old and no endpoint uses it."""
    deployment = deployment or next((n for k, n in created if k == "endpoint"), None)
    if deployment is not None:
        return f"`peagle delete {deployment} --yes`"
    return "`peagle gc --min-age 0 --yes`"


class Lifecycle:
    """Create, wait, roll back, update and delete endpoints through one AwsContext."""

    def __init__(
        self,
        aws: Any,
        *,
        say: Say = _quiet,
        poll_initial: float | None = None,
        poll_max: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.aws = aws
        self.say = say
        # PEAGLE_POLL_SECONDS lets the sandbox and tests poll fast without new CLI flags.
        env_poll = settings.poll_seconds()
        self.poll_initial = poll_initial or env_poll or 5.0
        self.poll_max = max(env_poll or poll_max, self.poll_initial)
        self.sleep = sleep

    @property
    def sm(self) -> Any:
        return self.aws.client("sagemaker")

    # -- create ---------------------------------------------------------------------
    def apply(
        self,
        plan: Plan,
        *,
        wait: bool = True,
        timeout: float | None = None,
        keep_on_failure: bool = False,
        preflight: bool = True,
        on_poll: Callable[[WaitState], None] | None = None,
    ) -> DeployResult:
        if plan.inference_components:  # endpoint.hosting: inference-components
            from .components import apply_components

            return apply_components(self, plan, wait, timeout, keep_on_failure, preflight, on_poll)
        plan.raise_for_failures()
        if preflight:
            from .preflight import run_preflight

            for c in run_preflight(plan, self.aws):
                if c.status == "warn":
                    self.say(f"warning: {c.name}: {c.message}")
        model_reqs, config_req, endpoint_req = tagged_requests(plan)
        created: list[tuple[str, str]] = []
        start = time.monotonic()
        try:
            if plan.drafter_push:
                self.push_drafter(plan)
            for model_req in model_reqs:
                self.sm.create_model(**model_req)
                created.append(("model", model_req["ModelName"]))
                self.say(f"created model {model_req['ModelName']}")
            self.sm.create_endpoint_config(**config_req)
            created.append(("endpoint_config", config_req["EndpointConfigName"]))
            self.say(f"created endpoint config {config_req['EndpointConfigName']}")
            self.create_endpoint(endpoint_req)
            created.append(("endpoint", endpoint_req["EndpointName"]))
            self.say(f"created endpoint {endpoint_req['EndpointName']}")
            desc: dict[str, Any] = {}
            if wait:
                desc = wait_for_endpoint(
                    self.sm,
                    plan.names["endpoint"],
                    timeout=timeout or default_timeout(plan.create_endpoint_config),
                    on_poll=on_poll,
                    log_tail=lambda: self.newest_log_line(plan.names["endpoint"]),
                    poll_initial=self.poll_initial,
                    poll_max=self.poll_max,
                    sleep=self.sleep,
                )
            if plan.autoscaling:
                if wait:
                    self._register_autoscaling(plan, created)
                else:
                    self.say(
                        "warning: autoscaling is registered once the endpoint is "
                        "InService; deploy with --wait to register it"
                    )
            status = desc.get("EndpointStatus", "Creating")
            return DeployResult(
                plan.names["endpoint"], status, created, time.monotonic() - start, desc
            )
        except (Exception, KeyboardInterrupt) as exc:
            err = as_error(exc)
            if isinstance(err, DeploymentFailed) and created and created[-1][0] == "endpoint":
                err.log_lines = self.last_log_lines(plan.names["endpoint"])
            if keep_on_failure:
                self.say(
                    f"kept for debugging: {', '.join(n for _, n in created)}; remove with "
                    f"`peagle delete {plan.names['endpoint']} --yes`"
                )
            else:
                self.rollback(created, plan.names["endpoint"])
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise err from None

    def _register_autoscaling(self, plan: Plan, created: list[tuple[str, str]]) -> None:
        """The plan's scalable target and policy; needs an InService endpoint. Each step
        is recorded in `created` as it happens, so a failed policy still rolls back the
        target registered just before it."""
        aas = self.aws.client("application-autoscaling")
        for operation, request in plan.autoscaling:
            if operation == "RegisterScalableTarget":
                aas.register_scalable_target(**request)
                created.append(("autoscaling", request["ResourceId"]))
                self.say(
                    f"registered scalable target {request['ResourceId']} "
                    f"({request['MinCapacity']}..{request['MaxCapacity']})"
                )
            else:
                aas.put_scaling_policy(**request)
                self.say(f"put scaling policy {request['PolicyName']}")

    def push_drafter(self, plan: Plan) -> None:
        """Push a local head. Content-addressed, so it is kept on rollback and reused by
        the next deploy of the same head (a second push uploads nothing)."""
        from ..drafter import push_drafter

        push = plan.drafter_push
        bucket = push["destination"][len("s3://") :].split("/", 1)[0]
        self._ensure_private_bucket(bucket, plan.region)
        self.say(f"pushing drafter {push['source']} -> {push['destination']}")
        push_drafter(push["source"], push["destination"], s3_client=self.aws.client("s3"))

    def _ensure_private_bucket(self, bucket: str, region: str) -> None:
        """Create the bucket if missing, with public access blocked and SSE-S3 on."""
        from botocore.exceptions import ClientError

        s3 = self.aws.client("s3")
        try:
            s3.head_bucket(Bucket=bucket)
            return
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
                raise
        kwargs: dict[str, Any] = {"Bucket": bucket}
        if region != "us-east-1":  # us-east-1 rejects an explicit LocationConstraint
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**kwargs)
        s3.put_public_access_block(
            Bucket=bucket,
            PublicAccessBlockConfiguration={
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        )
        s3.put_bucket_encryption(
            Bucket=bucket,
            ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
            },
        )
        self.say(f"created bucket {bucket} (public access blocked, SSE-S3)")

    def create_endpoint(self, req: dict) -> None:
        """CreateEndpoint reads the new config with eventual consistency: retry briefly."""
        from botocore.exceptions import ClientError

        for attempt in range(6):
            try:
                self.sm.create_endpoint(**req)
                return
            except ClientError as e:
                retryable = "endpoint config" in str(e).lower() and not_found(e)
                if not retryable or attempt == 5:
                    raise
                self.sleep(min(2**attempt, 10))

    # -- delete ---------------------------------------------------------------------
    def rollback(
        self, created: list[tuple[str, str]], deployment: str | None = None
    ) -> list[str]:
        """Delete what this run created, newest first, and verify each is gone. An
        inference component that cannot be deleted stops it before the endpoint, config
        and models (SageMaker refuses DeleteEndpoint while one remains): they are left for
        `peagle delete`, which the advice names whenever an endpoint is left."""
        from .components import SCALING, deregister_component_scaling

        left: list[str] = []
        stuck = False  # a component is left: the endpoint and what it uses stay too
        try:
            for kind, name in reversed(created):
                if stuck and kind in ("endpoint", "endpoint_config", "model"):
                    left.append(name)
                    continue
                self.say(f"rolling back {kind.replace('_', ' ')} {name}")
                try:
                    if kind == "autoscaling":
                        self._deregister_resource(name)
                    elif kind == SCALING:
                        deregister_component_scaling(self, name)
                    else:
                        self.delete_and_confirm(kind, name)
                except Exception as e:  # keep going: the rest must still be removed
                    left.append(name)
                    stuck = stuck or kind == "inference_component"
                    self.say(f"could not delete {name}: {e}")
        except KeyboardInterrupt:
            fix = _cleanup(created, None, deployment)
            self.say(f"rollback interrupted: run {fix} to remove what is left")
            raise
        if left:
            why = " (an inference component remains, so the endpoint was kept)" if stuck else ""
            fix = _cleanup(created, left, deployment)
            self.say(f"left behind: {', '.join(left)}{why}; run {fix} to remove it")
        return left

    def delete_and_confirm(self, kind: str, name: str, timeout: float = 900) -> bool:
        """Delete and wait until describe says it is gone. False if it was already gone."""
        from botocore.exceptions import ClientError

        delete, describe, arg = KINDS[kind]
        deadline = time.monotonic() + timeout
        while True:
            try:
                getattr(self.sm, delete)(**{arg: name})
                break
            except ClientError as e:
                if not_found(e):
                    return False
                # An endpoint still being created or updated cannot be deleted yet.
                if "in-progress" not in str(e).lower() or time.monotonic() > deadline:
                    raise
                self.sleep(self.poll_initial)
        while time.monotonic() < deadline:
            try:
                getattr(self.sm, describe)(**{arg: name})
            except ClientError as e:
                if not_found(e):
                    return True
                raise
            self.sleep(self.poll_initial)
        raise DeploymentFailed(f"{name} is still being deleted after {timeout:.0f}s")

    def deletion(
        self, endpoint: str, *, keep_model: bool = False, force: bool = False
    ) -> Deletion | None:
        """What `delete` removes, read only (None: the endpoint is gone already). The same
        refusals as `delete`: an endpoint, or a component on it, that peagle did not create
        (SpecError, unless `force`). A config or model something else uses is kept, and so
        is the model of a component peagle did not create."""
        from botocore.exceptions import ClientError

        from ..errors import SpecError
        from .components import component_models, split_components
        from .inventory import is_managed, resource_users

        try:
            desc = self.sm.describe_endpoint(EndpointName=endpoint)
        except ClientError as e:
            if not_found(e):
                return self._leftovers(endpoint, keep_model=keep_model)
            raise
        if not force and not is_managed(self.sm, desc["EndpointArn"]):
            raise SpecError(
                f"endpoint {endpoint} was not created by peagle (no peagle:managed tag); "
                "nothing was deleted",
                remedy=f"`peagle delete {endpoint} --force` if you mean it",
            )
        configs = [desc["EndpointConfigName"]]
        pending = (desc.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
        if pending:
            configs.append(pending)
        models: list[str] = []
        for cfg in configs:
            models += models_of(self.sm, cfg)
        mine, foreign = split_components(self.sm, endpoint)
        if foreign and not force:
            raise SpecError(
                f"endpoint {endpoint} also hosts inference component(s) peagle did not "
                f"create: {', '.join(foreign)}; deleting the endpoint would destroy them; "
                "nothing was deleted",
                remedy=f"`peagle delete {endpoint} --force` if you mean it",
            )
        theirs = component_models(self.sm, foreign)
        models += [m for m in component_models(self.sm, mine) if m not in theirs]
        # Never delete a config or model another endpoint (or its components) still uses;
        # this endpoint's own components go first, so they do not count.
        users = resource_users(self.sm, skip=endpoint)
        shared = {n: sorted(users[n]) for n in [*configs, *models] if n in users}
        return Deletion(
            endpoint=endpoint,
            described=desc,
            components=[*mine, *foreign],
            configs=[c for c in configs if c not in shared],
            models=[] if keep_model else [m for m in dict.fromkeys(models) if m not in shared],
            kept_models=list(dict.fromkeys(models)) if keep_model else [],
            kept_shared=shared,
            kept_component_models=list(dict.fromkeys(theirs)),
        )

    def _leftovers(self, endpoint: str, *, keep_model: bool) -> Deletion | None:
        """The endpoint is gone (deleted by hand, or a delete interrupted after
        DeleteEndpoint): the configs and models peagle tagged with this deployment
        (`peagle:deployment`) that nothing else uses. None when there are none."""
        from .inventory import deployment_resources, resource_users

        configs, models = deployment_resources(self.sm, endpoint)
        users = resource_users(self.sm)
        shared = {n: sorted(users[n]) for n in [*configs, *models] if n in users}
        configs = [c for c in configs if c not in shared]
        free_models = [m for m in models if m not in shared]
        if not configs and not free_models:
            return None
        return Deletion(
            endpoint=endpoint,
            described=None,
            components=[],
            configs=configs,
            models=[] if keep_model else free_models,
            kept_models=free_models if keep_model else [],
            kept_shared=shared,
            kept_component_models=[],
        )

    def delete(
        self, endpoint: str, *, keep_model: bool = False, force: bool = False
    ) -> dict[str, Any]:
        """Delete an endpoint (its components first), then the config and models it uses
        that nothing else uses (`deletion` says which, and what is refused)."""
        from .components import deregister_component_scaling

        plan = self.deletion(endpoint, keep_model=keep_model, force=force)
        if plan is None:
            return {"endpoint": endpoint, "deleted": [], "note": "already gone"}
        for name in plan.components:  # SageMaker refuses DeleteEndpoint while they remain
            deregister_component_scaling(self, name)
            if self.delete_and_confirm("inference_component", name):
                self.say(f"deleted inference component {name}")
        for model in plan.kept_component_models:
            self.say(f"kept model {model}: an inference component peagle did not create named it")
        deleted = []
        if plan.described is None:
            self.say(f"endpoint {endpoint} was already gone; removing what it left")
        else:
            self._deregister_autoscaling(endpoint, plan.described)
            if self.delete_and_confirm("endpoint", endpoint):
                deleted.append(endpoint)
        for cfg in plan.configs:
            if self.delete_and_confirm("endpoint_config", cfg):
                deleted.append(cfg)
        for m in plan.models:
            if self.delete_and_confirm("model", m):
                deleted.append(m)
        if deleted:  # one line for all: the CLI prints nothing more
            self.say(f"deleted {', '.join(deleted)}")
        for name, eps in plan.kept_shared.items():
            self.say(f"kept {name}: endpoint {', '.join(eps)} uses it")
        return {
            "endpoint": endpoint,
            "deleted": deleted,
            "kept_models": plan.kept_models,
            "kept_shared": plan.kept_shared,
        }

    def _deregister_autoscaling(self, endpoint: str, desc: dict[str, Any]) -> None:
        """Scaling targets must go before the endpoint, or they outlive it."""
        for v in desc.get("ProductionVariants", []):
            self._deregister_resource(f"endpoint/{endpoint}/variant/{v['VariantName']}")

    def _deregister_resource(self, rid: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        aas = self.aws.client("application-autoscaling")
        try:
            found = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[rid])[
                "ScalableTargets"
            ]
            if not found:
                return
            for pol in aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=rid)[
                "ScalingPolicies"
            ]:
                aas.delete_scaling_policy(
                    PolicyName=pol["PolicyName"],
                    ServiceNamespace="sagemaker",
                    ResourceId=rid,
                    ScalableDimension=pol["ScalableDimension"],
                )
            aas.deregister_scalable_target(
                ServiceNamespace="sagemaker",
                ResourceId=rid,
                ScalableDimension="sagemaker:variant:DesiredInstanceCount",
            )
            self.say(f"deregistered autoscaling for {rid}")
        except (ClientError, BotoCoreError) as e:
            self.say(f"warning: autoscaling for {rid} not checked: {e}")

    # -- logs -----------------------------------------------------------------------
    def last_log_lines(self, endpoint: str, n: int = 20) -> list[str]:
        from .endpoint_logs import fetch_log_events

        try:
            return [e["message"] for e in fetch_log_events(self.aws, endpoint, since=3 * 3600)][-n:]
        except Exception:  # logs are a courtesy on the failure path; never mask the error
            return []

    def newest_log_line(self, endpoint: str) -> str | None:
        lines = self.last_log_lines(endpoint, 1)
        return lines[-1] if lines else None

    def update(
        self,
        plan: Plan,
        *,
        timeout: float | None = None,
        on_poll: Callable[[WaitState], None] | None = None,
    ) -> DeployResult:
        """New model + config, UpdateEndpoint, wait; see `lifecycle.update`."""
        if plan.inference_components:
            from .component_update import update_components

            return update_components(self, plan, timeout=timeout)
        from .update import update_in_place

        return update_in_place(self, plan, timeout=timeout, on_poll=on_poll)
