"""Update an endpoint in place: new model(s) + config, UpdateEndpoint, wait.

The old model and config are removed only after success. If SageMaker rolls the update
back, the endpoint keeps serving the old config and the new resources are removed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from ..errors import (
    Call,
    DeploymentFailed,
    Interrupted,
    InterruptedAfterChange,
    PeagleError,
    text,
)
from ..planning.plan_result import Plan
from ..planning.rollout import RolloutPlan
from .operation import COMPLETED, OPERATION, OWNER, UNTIL, Operation
from .resources import (
    DeployResult,
    as_error,
    describe_existing,
    models_of,
    tagged_requests,
)
from .retag import retag
from .rollout import (
    ROLLOUT_ALARM,
    prepare_rollout,
    put_rollout_alarms,
    remove_rollout_alarms,
    update_request,
)
from .rollout_finish import finish_rollout, rolled_back
from .rollout_watch import Watch, watch_rollout
from .spec_tags import decode_spec, tag_dict
from .waiter import WaitState, default_timeout, wait_for_endpoint


def update_in_place(
    lc: Any,
    plan: Plan,
    *,
    timeout: float | None = None,
    on_poll: Callable[[WaitState], None] | None = None,
) -> DeployResult:
    """New model + config, UpdateEndpoint, wait; old ones removed only after success.
    On failure SageMaker keeps serving the old config; the new resources are removed.
    `lc` is the calling `manager.Lifecycle` (its client, poll settings, rollback and
    delete); it is not imported here, so the dependency runs manager -> update only."""
    plan.raise_for_failures()
    name = plan.names["endpoint"]
    current = describe_existing(lc.sm, name)
    _check_in_service(name, current["EndpointStatus"])
    old_config = current["EndpointConfigName"]
    if old_config == plan.names["endpoint_config"]:
        # Same config; the endpoint's own tags may still lag the spec (tags only), and a
        # deploy that was cut short after the endpoint came up is complete now.
        tags = tagged_requests(plan)[2]["Tags"]
        retag_endpoint(lc, current["EndpointArn"], tags + _unmarked(lc, current["EndpointArn"]))
        return DeployResult(name, "InService", [], 0.0, current)
    old_models = models_of(lc.sm, old_config)
    # A rollout is planned and checked before anything is created (SpecError, exit 2).
    rp = prepare_rollout(lc, plan, current, tagged_requests(plan)[1])
    limit = timeout or (rp.wait_s if rp else default_timeout(plan.create_endpoint_config))
    op = Operation.start(limit, lc.aws.synced_aws_now())
    model_reqs, config_req, _ = tagged_requests(plan)
    model_reqs, config_req = [op.stamp(m) for m in model_reqs], op.stamp(config_req)
    created: list[tuple[str, str]] = []
    trying: list[tuple[str, str]] = []  # the Create* in flight: sent, not yet answered
    sent_update = False
    start = time.monotonic()
    seen = Watch()
    try:
        for model_req in model_reqs:
            trying[:] = [("model", model_req["ModelName"])]
            lc.sm.create_model(**model_req)
            created.append(trying.pop())
        trying[:] = [("endpoint_config", config_req["EndpointConfigName"])]
        lc.sm.create_endpoint_config(**config_req)
        created.append(trying.pop())
        if rp is not None:  # after the config they watch, before the update they guard
            put_rollout_alarms(lc.aws, rp, created, trying, lc.say)
        sent_update = True  # from here SageMaker may be switching, whatever we hear
        desc = _send_and_wait(lc, plan, rp, config_req, old_config, limit, on_poll, seen)
        _switch_over(lc, current["EndpointArn"], config_req, old_config, old_models, name, op)
    except (Exception, KeyboardInterrupt) as exc:
        err = as_error(exc)
        completed = False
        if sent_update:
            olds = (old_config, old_models)
            completed = _settle(
                lc, name, current["EndpointArn"], config_req, olds, op, created,
                wait_s=rp.wait_s if rp is not None else 900,
            )  # fmt: skip
        else:
            lc.rollback(created, name, op=op, in_flight=trying)
        if isinstance(exc, KeyboardInterrupt):
            if completed:  # it took effect and the clean-up ran: say so, not just "interrupted"
                new = config_req["EndpointConfigName"]
                raise InterruptedAfterChange(
                    f"update of {name} completed (it serves {new})"
                ) from exc
            raise
        raise err from None
    finally:
        op.end()
    report = None
    if rp is not None:
        report = finish_rollout(lc, name, rp, seen, desc, created)
    return DeployResult(name, "InService", created, time.monotonic() - start, desc, report)


def _send_and_wait(
    lc: Any,
    plan: Plan,
    rp: RolloutPlan | None,
    config_req: dict[str, Any],
    old_config: str,
    limit: float,
    on_poll: Callable[[WaitState], None] | None,
    seen: Watch,
) -> dict[str, Any]:
    """UpdateEndpoint (with the rollout's DeploymentConfig), then the wait (a rollout's
    watch); the description once it serves the new config, else the rollback's error."""
    name, new_config = plan.names["endpoint"], config_req["EndpointConfigName"]
    sent_at = lc.aws.synced_aws_now().timestamp()
    lc.sm.update_endpoint(**update_request(name, new_config, rp, autoscaled=bool(plan.autoscaling)))
    how = f" ({rp.strategy} rollout)" if rp is not None else ""
    lc.say(f"updating {name}: {old_config} -> {new_config}{how}")
    if rp is not None:
        desc = watch_rollout(lc, name, rp, limit=limit, on_poll=on_poll, seen=seen)
    else:
        desc = wait_for_endpoint(
            lc.sm,
            name,
            timeout=limit,
            on_poll=on_poll,
            poll_initial=lc.poll_initial,
            poll_max=lc.poll_max,
            sleep=lc.sleep,
        )
    if desc["EndpointConfigName"] != new_config:
        if rp is not None:
            lc.say("rolled back")
            raise rolled_back(lc, name, rp, seen, desc, old_config, sent_at)
        raise DeploymentFailed(
            f"update of {name} was rolled back by SageMaker: "
            f"{desc.get('FailureReason') or 'no reason given'}; still serving {old_config}",
            failure_reason=desc.get("FailureReason"),
        )
    return desc


def _check_in_service(name: str, status: str) -> None:
    """Refuse an endpoint SageMaker is still working on, or one that failed, with the fix:
    `peagle update NAME` waits for a settling one (`reconcile.wait_settled`) first."""
    if status == "InService":
        return
    raise DeploymentFailed(
        f"endpoint {name} is {status}; only an InService endpoint can be updated",
        remedy=text(
            "`{update}` waits for it to settle and finishes it",
            update=Call("update", name, yes=True),
        )
        if status != "Failed"
        else text("`{delete}`, then deploy again", delete=Call("delete", name)),
    )


def _settle(
    lc: Any,
    name: str,
    arn: str,
    config_req: dict,
    olds: tuple[str, list[str]],
    op: Operation,
    created: list[tuple[str, str]],
    *,
    wait_s: float = 900,
) -> bool:
    """After UpdateEndpoint reached SageMaker, a Ctrl-C or a timeout does not stop it:
    let it finish or roll back, then switch over (the old config and model are what is
    left) or remove the new ones. A second interrupt stops that; what is left then is
    finished by `peagle update NAME --yes` (`lifecycle.reconcile`): the Interrupted
    raised names it and each thing left, by kind and name. True when the update took
    effect and the switch-over (retag, old ones removed) is done: the change completed."""
    new_config = config_req["EndpointConfigName"]
    old_config, old_models = olds
    old = [("endpoint_config", old_config), *(("model", m) for m in old_models)]
    removed: list[str] = []  # what the switch-over deleted before it was stopped
    alarms = [c for c in created if c[0] == ROLLOUT_ALARM]  # a rollout's: they go either way
    switching = False
    try:
        settled = _wait_settled(lc, name, wait_s)
        if settled.get("EndpointConfigName") == new_config:
            lc.say(f"{name} finished updating to {new_config} anyway")
            switching = True
            _switch_over(lc, arn, config_req, old_config, old_models, name, op, removed)
            remove_rollout_alarms(lc, created, name)
            return True
        if _mixed(lc, name, settled):  # both fleets serve: neither set may go
            remove_rollout_alarms(lc, created, name)
            lc.say(f"kept {new_config} and its models, and {old_config}: {name} is "
                   "UpdateRollbackFailed, a mix of the old and new fleets serves")  # fmt: skip
            return False
        lc.rollback(created, name, op=op)
        return False
    except Interrupted:
        raise  # the rollback's own: it names the new resources and `gc --operation`
    except KeyboardInterrupt as stop:
        if switching:  # the endpoint serves the new config: the old one and its models
            left = [("endpoint_tags", name)] if not removed else []
            left += [(k, n) for k, n in old if n not in removed]
            left += [a for a in alarms if a in created]
            note = None
        else:  # SageMaker may still be switching: which set ends up unused is not known
            left = [*old, *(k for k in created if k[0] in ("endpoint_config", "model"))]
            left += [a for a in alarms if a in created]
            note = (
                f"{name} may still be switching to {new_config}: the old set or the new "
                "one is left, and perhaps the endpoint's tags"
            )
        done = switching and bool(removed)  # retagged: the change is complete, clean-up not
        raise Interrupted(
            f"update completed ({name} serves {new_config}); its clean-up stopped"
            if done
            else "update stopped",
            left,
            Call("update", name),
            effect="removes the unused ones"
            if done
            else "finishes the update: the endpoint takes its tags, the unused ones go",
            operation=op.id,
            region=getattr(lc.aws, "region", None),
            note=note,
        ) from stop


def _mixed(lc: Any, name: str, settled: dict[str, Any]) -> bool:
    """The endpoint is UpdateRollbackFailed: "Both the rolling deployment and auto-rollback
    failed. Your endpoint is in service with a mix of the old and new endpoint
    configurations" (botocore's model), so the new config and models are in use."""
    if not settled:  # the wait gave up on a bad status: read it once
        with contextlib.suppress(Exception):
            settled = lc.sm.describe_endpoint(EndpointName=name)
    return settled.get("EndpointStatus") == "UpdateRollbackFailed"


def _unmarked(lc: Any, arn: str) -> list[dict[str, str]]:
    """The `peagle:completed` tag an InService endpoint lacks when the deploy that created
    it never finished (killed while it waited): serving its spec, it is complete."""
    tags = tag_dict(lc.sm.list_tags(ResourceArn=arn).get("Tags", []))
    if tags.get(OPERATION) and not tags.get(COMPLETED):
        return [{"Key": COMPLETED, "Value": tags[OPERATION]}]
    return []


def _switch_over(
    lc: Any,
    arn: str,
    config_req: dict,
    old_config: str,
    old_models: list[str],
    name: str,
    op: Operation,
    removed: list[str] | None = None,
) -> None:
    """The endpoint serves the new config: retag it (and mark `op` complete on it), remove
    the old config and models, except those another endpoint uses (possible for resources
    `peagle adopt` took over: the names peagle generates are its own). `removed` gets the
    retag's mark (the endpoint's name) and each old resource's name once they are done,
    for an interrupt to say what is left."""
    from .inventory import resource_users

    removed = [] if removed is None else removed
    retag_endpoint(lc, arn, [*config_req["Tags"], {"Key": COMPLETED, "Value": op.id}])
    removed.append(name)
    users = resource_users(lc.sm, skip=name)
    for kind, old in [("endpoint_config", old_config)] + [("model", m) for m in old_models]:
        if old in users:
            lc.say(
                f"kept old {kind.replace('_', ' ')} {old}: {', '.join(sorted(users[old]))} uses it"
            )
            removed.append(old)
            continue
        lc.delete_and_confirm(kind, old)
        removed.append(old)
        lc.say(f"removed old {kind.replace('_', ' ')} {old}")


def _wait_settled(lc: Any, name: str, timeout: float = 900) -> dict[str, Any]:
    """Before removing a new config, let SageMaker finish the update or roll it back
    (a rollout: its bakes and its rollback); the endpoint's description then ({} if it
    did not settle)."""
    with contextlib.suppress(PeagleError):
        return wait_for_endpoint(
            lc.sm,
            name,
            timeout=timeout,
            poll_initial=lc.poll_initial,
            poll_max=lc.poll_max,
            sleep=lc.sleep,
        )
    return {}


def retag_endpoint(lc: Any, arn: str, tags: list[dict[str, str]]) -> None:
    """Give the endpoint the new spec's tags: peagle's own and the spec's `tags`, and drop
    the user tags the old spec set that the new one does not (tags added outside peagle
    stay). The operation that created the endpoint, and the record of the last one that
    completed, stay unless `tags` sets them. Added before anything is removed
    (`lifecycle.retag`), so a run killed in between leaves a readable spec."""
    current = tag_dict(lc.sm.list_tags(ResourceArn=arn).get("Tags", []))
    old_user = set(((decode_spec(current) or {}).get("tags") or {}).keys())
    created_by = {OPERATION, OWNER, UNTIL}
    wanted = {t["Key"]: t["Value"] for t in tags if t["Key"] not in created_by}
    keep = (created_by | {COMPLETED}) - set(wanted)
    retag(
        lc.sm,
        arn,
        wanted,
        lambda k: (k.startswith("peagle:") or k in old_user) and k not in keep,
        current=current,
    )
