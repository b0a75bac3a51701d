"""The only code that creates or deletes SageMaker resources.

apply: preflight -> model -> endpoint config -> endpoint -> wait. On Failed, timeout,
Ctrl-C or any error, everything this run created is deleted newest first and verified
gone, unless the caller asked to keep it. Every resource is tagged peagle:managed so
`peagle gc` can find what an interrupted rollback left.

`Lifecycle` holds create, wait and rollback, and the deletion of one resource
(`delete_and_confirm`) both rollback and delete use. What deleting an endpoint removes
and keeps, and the delete itself, are `lifecycle/deletion.py` (`Lifecycle.deletion` and
`Lifecycle.delete` call it); updates are `lifecycle/update.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import settings
from ..errors import Call, DeploymentFailed, Interrupted, Param, text
from ..planning.plan_result import Plan
from .expiry import SCHEDULE, arm, check_ttl, start_expiry, undo_schedule
from .expiry_update import follow_ttl
from .operation import COMPLETED, OPERATION, Operation
from .resources import ARNS, KINDS, DeployResult, as_error, not_found, tagged_requests
from .spec_tags import tag_dict
from .waiter import WaitState, default_timeout, wait_for_endpoint

if TYPE_CHECKING:
    from .deletion import Deletion


Say = Callable[[str], None]
# `Lifecycle.update(monitoring=...)` not given: what the plan's spec and the live say.
FROM_PLAN: Any = object()


def _quiet(_: str) -> None:
    pass


def _cleanup(
    todo: list[tuple[str, str]], deployment: str | None, op: Operation | None = None
) -> Call:
    """The one SDK call (at the CLI, its command with `--yes`) that removes what a
    stopped or failed rollback left. A run that created (or was creating) the endpoint:
    `delete` of it, which removes the endpoint if there is one and the configs and
    models tagged with that deployment either way, nothing else. An update (the endpoint
    is older than the run): gc of exactly the operation's resources."""
    from .monitoring_read import MONITORING_KINDS

    endpoint = next((n for k, n in todo if k == "endpoint"), None)
    # A deploy stopped before CreateEndpoint with monitoring made: `delete` finds that
    # (its configs, models and monitoring by their tags); gc --operation would not (the
    # monitoring carries no operation tag).
    # (A rollout's alarms are an update's: the endpoint stays, so never `delete` for them.)
    made_monitoring = any(k in MONITORING_KINDS and k != "rollout_alarm" for k, _ in todo)
    if made_monitoring and deployment is not None:
        return Call("delete", deployment)
    if endpoint is not None or (op is None and deployment is not None):
        return Call("delete", str(endpoint or deployment))
    if op is not None:
        return Call("gc", operation=op.id)
    return Call("gc")


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
        now = check_ttl(self.aws, plan)  # a bad TTL: SpecError before the preflight's reads
        group_exists = self._preflight(plan, preflight)
        limit = timeout or default_timeout(plan.create_endpoint_config)
        op = Operation.start(limit, now := now or self.aws.synced_aws_now())  # no TTL: read now
        model_reqs, config_req, endpoint_req = tagged_requests(plan)
        model_reqs = [op.stamp(m) for m in model_reqs]
        config_req, endpoint_req = op.stamp(config_req), op.stamp(endpoint_req)
        expiry = start_expiry(self, plan, op, now, endpoint_req)  # a bad TTL: nothing sent
        created: list[tuple[str, str]] = []
        trying: list[tuple[str, str]] = []  # the Create* in flight: sent, not yet answered
        start = time.monotonic()
        try:
            if plan.drafter_push:
                self.push_drafter(plan)
            arm(self, expiry, created, trying, self.sleep)  # before CreateEndpoint: see expiry
            arn = self._create(
                model_reqs, config_req, endpoint_req, created, trying, plan, group_exists
            )
            desc: dict[str, Any] = {}
            if wait:
                desc = wait_for_endpoint(
                    self.sm,
                    plan.names["endpoint"],
                    timeout=limit,
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
                        text(
                            "warning: autoscaling is registered once the endpoint is "
                            "InService; deploy with {wait} to register it",
                            wait=Param("wait", True),
                        )
                    )
            self.complete(op, arn)
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
                    text(
                        "kept for debugging: {kept}; remove with `{delete}`",
                        kept=", ".join(n for _, n in created + trying),
                        delete=Call("delete", plan.names["endpoint"]),
                    )
                )
            else:
                self.rollback(created, plan.names["endpoint"], op=op, in_flight=trying)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise err from None
        finally:
            op.end()

    def _preflight(self, plan: Plan, preflight: bool) -> bool:
        """The preflight checks (`preflight`), then monitoring's, which always runs: it
        says whether the log group exists (peagle then neither creates nor owns it), and a
        foreign transformer on it refuses the deploy before anything is created."""
        if preflight:
            from .preflight import run_preflight

            for c in run_preflight(plan, self.aws):
                if c.status == "warn":
                    self.say("warning: " + c.line(with_fix=False))
        if plan.monitoring is None:
            return False
        from .monitoring import check_monitoring

        return check_monitoring(self.aws, plan.monitoring)

    def _create(
        self,
        model_reqs: list[dict],
        config_req: dict,
        endpoint_req: dict,
        created: list[tuple[str, str]],
        trying: list[tuple[str, str]],
        plan: Plan | None = None,
        group_exists: bool = False,
    ) -> str:
        """The models, the config, the monitoring, the endpoint (its ARN). Each Create* is
        in `trying` while it is in flight and moves to `created` once SageMaker answers.
        The monitoring goes before CreateEndpoint: SageMaker creates the log group on its
        first write (untagged, never expiring) if peagle has not, and the transformer
        must see the container's first lines."""
        for model_req in model_reqs:
            trying[:] = [("model", model_req["ModelName"])]
            self.sm.create_model(**model_req)
            created.append(trying.pop())
            self.say(f"created model {model_req['ModelName']}")
        trying[:] = [("endpoint_config", config_req["EndpointConfigName"])]
        self.sm.create_endpoint_config(**config_req)
        created.append(trying.pop())
        self.say(f"created endpoint config {config_req['EndpointConfigName']}")
        if plan is not None and plan.monitoring is not None:
            from .monitoring import ensure_monitoring

            ensure_monitoring(
                self.aws,
                plan.monitoring,
                group_exists=group_exists,
                say=self.say,
                created=created,
                trying=trying,
            )
        trying[:] = [("endpoint", endpoint_req["EndpointName"])]
        arn = self.create_endpoint(endpoint_req)
        created.append(trying.pop())
        self.say(f"created endpoint {endpoint_req['EndpointName']}")
        return arn

    def complete(self, op: Operation, endpoint_arn: str) -> None:
        """Mark the endpoint's deployment finished (`peagle:completed`): until then
        `status` calls it unfinished and, once its operation is over, `gc` removes it."""
        self.sm.add_tags(ResourceArn=endpoint_arn, Tags=[{"Key": COMPLETED, "Value": op.id}])

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
        from .drafter_upload import push_drafter

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

    def create_endpoint(self, req: dict) -> str:
        """CreateEndpoint (its ARN); it reads the new config with eventual consistency,
        so a config not found yet is retried briefly."""
        from botocore.exceptions import ClientError

        for attempt in range(6):
            try:
                return str(self.sm.create_endpoint(**req)["EndpointArn"])
            except ClientError as e:
                retryable = "endpoint config" in str(e).lower() and not_found(e)
                if not retryable or attempt == 5:
                    raise
                self.sleep(min(2**attempt, 10))
        raise AssertionError("unreachable: the last attempt returns or raises")

    # -- delete ---------------------------------------------------------------------
    def rollback(
        self,
        created: list[tuple[str, str]],
        deployment: str | None = None,
        *,
        op: Operation | None = None,
        in_flight: list[tuple[str, str]] | None = None,
    ) -> list[str]:
        """Undo a run, newest first, and verify each deletion. With `op`, what exists
        decides, not what the run heard back: each name the run created, or was creating
        when it stopped (`in_flight`: its Create* sent, no answer yet), is deleted if it
        carries the operation's tag, and left alone if it does not (someone else's, of
        the same name: a deploy racing this one). A component that cannot be deleted stops
        it before the endpoint, config and models (DeleteEndpoint is refused while one
        remains). A second interrupt stops it, naming what is left and the one command
        that removes exactly those."""
        from .components import SCALING, deregister_component_scaling
        from .monitoring import MONITORING_KINDS, remove_one
        from .rollout import ROLLOUT_ALARM, remove_rollout_alarm

        todo = [*created, *(in_flight or [])]
        left: list[str] = []
        stuck = False  # a component is left: the endpoint and what it uses stay too
        done: set[int] = set()
        try:
            for i in reversed(range(len(todo))):
                kind, name = todo[i]
                if stuck and kind in ("endpoint", "endpoint_config", "model"):
                    left.append(name)
                    done.add(i)
                    continue
                try:
                    if kind == "autoscaling":
                        self.say(f"rolling back autoscaling {name}")
                        self._deregister_resource(name)
                    elif kind == SCALING:
                        self.say(f"rolling back component scaling {name}")
                        deregister_component_scaling(self, name)
                    elif kind == ROLLOUT_ALARM:
                        self.say(f"rolling back rollout alarm {name}")
                        remove_rollout_alarm(self.aws, name, str(deployment))
                    elif kind == SCHEDULE:
                        undo_schedule(self, name, op)
                    elif kind in MONITORING_KINDS:
                        # peagle's own by its tags or name, checked again by remove_one
                        self.say(f"rolling back {kind.replace('_', ' ')} {name}")
                        remove_one(self.aws, kind, name, str(deployment))
                    elif op is None or self._made_by(kind, name, op, todo[i] not in created):
                        self.say(f"rolling back {kind.replace('_', ' ')} {name}")
                        self.delete_and_confirm(kind, name)
                except Exception as e:  # keep going: the rest must still be removed
                    left.append(name)
                    stuck = stuck or kind == "inference_component"
                    self.say(f"could not delete {name}: {e}")
                done.add(i)
        except KeyboardInterrupt as stop:
            # Named on the error: the CLI's last line (--quiet, --json too); the SDK's field.
            rest = [todo[i] for i in range(len(todo)) if i not in done]
            kinds = (*KINDS, *MONITORING_KINDS, ROLLOUT_ALARM, SCHEDULE)
            named = [(k, n) for k, n in reversed(rest) if k in kinds]
            named += [(k, n) for k, n in reversed(todo) if n in left]
            raise Interrupted(
                "rollback stopped",
                named,
                _cleanup(todo, deployment, op),
                effect="removes exactly these" if op else "removes what is left",
                operation=op.id if op else None,
                region=getattr(self.aws, "region", None),
            ) from stop
        if left:
            why = " (an inference component remains, so the endpoint was kept)" if stuck else ""
            self.say(
                text(
                    "left behind: {left}{why}; run `{fix}` to remove it",
                    left=", ".join(left),
                    why=why,
                    fix=_cleanup(todo, deployment, op),
                )
            )
        return left

    def _made_by(self, kind: str, name: str, op: Operation, in_flight: bool) -> bool:
        """Does `name` exist and carry `op`'s tag? For the Create* that was in flight when
        the run stopped, SageMaker may still be making it: look again, briefly."""
        from botocore.exceptions import ClientError

        describe, arg = KINDS[kind][1], KINDS[kind][2]
        for attempt in range(4 if in_flight else 1):
            try:
                desc = getattr(self.sm, describe)(**{arg: name})
            except ClientError as e:
                if not not_found(e):
                    raise
                if attempt < (3 if in_flight else 0):
                    self.sleep(min(self.poll_initial, 1.0))
                continue
            arn = desc[ARNS[kind]]
            tags = tag_dict(self.sm.list_tags(ResourceArn=arn).get("Tags", []))
            if tags.get(OPERATION) == op.id:
                return True
            self.say(f"left {kind.replace('_', ' ')} {name}: another run made it")
            return False
        return False

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
        self,
        endpoint: str,
        *,
        keep_model: bool = False,
        force: bool = False,
        keep_logs: bool = False,
    ) -> Deletion | None:
        """What `delete` removes, read only (None: the endpoint is gone already); see
        `lifecycle.deletion`."""
        from .deletion import plan_deletion

        return plan_deletion(
            self, endpoint, keep_model=keep_model, force=force, keep_logs=keep_logs
        )

    def delete(
        self,
        endpoint: str,
        *,
        keep_model: bool = False,
        force: bool = False,
        keep_logs: bool = False,
    ) -> dict[str, Any]:
        """Delete an endpoint, its components first, then what only it used; see
        `lifecycle.deletion`."""
        from .deletion import delete_endpoint

        return delete_endpoint(
            self, endpoint, keep_model=keep_model, force=force, keep_logs=keep_logs
        )

    def deregister_autoscaling(self, endpoint: str, desc: dict[str, Any]) -> None:
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
        monitoring: Any = FROM_PLAN,
    ) -> DeployResult:
        """New model + config, UpdateEndpoint, wait; see `lifecycle.update`. Then the
        monitoring: `monitoring` (a MonitoringPlan, or None for none), by default what
        `monitoring.wanted_monitoring` makes of the plan and what is live (a threshold
        left to the default follows a new K)."""
        if plan.inference_components:
            from .component_update import update_components

            return update_components(self, plan, timeout=timeout)
        from .update import update_in_place

        want = plan.monitoring if monitoring is FROM_PLAN else monitoring
        if want is not None and (monitoring is not FROM_PLAN or plan.spec.monitoring):
            from .monitoring import check_monitoring

            # Turning it on: a foreign transformer refuses before SageMaker is touched.
            check_monitoring(self.aws, want)
        result = update_in_place(self, plan, timeout=timeout, on_poll=on_poll)
        self.follow_monitoring(plan, monitoring, updated=True)
        follow_ttl(self, plan, None)  # apply's spec gaining a TTL (never extends one)
        if result.rollout is not None:  # an idle bake: the update is done, not verified
            from .rollout_finish import unverified_error

            rollout = plan.spec.endpoint.rollout
            err = unverified_error(
                result.endpoint, result.rollout, require_traffic=rollout.require_traffic
            )
            if err is not None:
                raise err
        return result

    def follow_monitoring(
        self, plan: Plan, monitoring: Any = FROM_PLAN, *, updated: bool = False
    ) -> list[str]:
        """Make the endpoint's monitoring what `monitoring` says (FROM_PLAN: see
        `update`), sending only what differs; `updated`: SageMaker was just updated (an
        error says so). The names of what changed."""
        from ..errors import PeagleError
        from .monitoring import sync_monitoring, wanted_monitoring
        from .monitoring_read import read_monitoring_if_allowed

        name = plan.names["endpoint"]
        # Asked: the spec has a monitoring section, or the caller names one. Otherwise a
        # denied read (a policy from before monitoring) leaves it be, with a warning.
        asked = plan.spec.monitoring is not None or monitoring not in (FROM_PLAN, None)
        try:
            live, read = read_monitoring_if_allowed(self.aws, name, None if asked else self.say)
            if not read and not asked:
                return []
            want = wanted_monitoring(plan, live) if monitoring is FROM_PLAN else monitoring
            return sync_monitoring(self.aws, want, live, say=self.say)
        except Exception as exc:
            if isinstance(exc, PeagleError) and not updated:
                raise  # a SpecError (a foreign transformer) keeps its exit 2
            err = as_error(exc)
            if updated:
                err.message = text(
                    "{name} was updated, but not its monitoring: {why}",
                    name=name,
                    why=err.message,
                )
                err.remedy = err.remedy or text(
                    "run the same update again (it sends only what is left)"
                )
            raise err from None
