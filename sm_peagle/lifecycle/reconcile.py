"""Finish an update that was cut short after SageMaker took it.

An update is several requests: the new model and config, UpdateEndpoint, the endpoint's
tags, the old config and model removed. Once UpdateEndpoint has reached SageMaker the
switch happens whatever the client hears, so a run killed (or interrupted twice) after it
leaves the endpoint serving the new config while its tags still describe the old spec,
and the old config and model unused. No ordering of two requests avoids that window.

What is on AWS says how to finish: the serving config (for a component update, which
keeps the config, the component's new model) carries the spec and the operation that made
it, and an update that completed marked the endpoint with that operation
(`peagle:completed`). When it did not, and that operation is over, the endpoint takes the
config's tags and the mark, and the deployment's configs and models nothing uses, made
by no running operation, go. `peagle update NAME --yes` runs this first (it is the
command an interrupted update names), and `peagle gc` does it for every endpoint.
"""

from __future__ import annotations

from typing import Any

from ..aws import aws_now
from .operation import COMPLETED, OPERATION_KEYS, Operation
from .resources import MANAGED, deployment_resources, not_found
from .spec_tags import tag_dict
from .unfinished import unfinished_update

__all__ = ["finish_update", "wait_settled"]

# States SageMaker leaves on its own; an update cannot start (or be finished) until it has.
SETTLING = ("Creating", "Updating", "SystemUpdating", "RollingBack")


def wait_settled(
    lc: Any, name: str, *, timeout: float | None = None, on_poll: Any = None
) -> dict[str, Any] | None:
    """Wait, with the usual wait view (`on_poll`) and `timeout` (default an hour), for
    endpoint `name` to leave a state SageMaker is still working in (`SETTLING`): the
    command an interrupted update names (`peagle update NAME --yes`) is pasted at once,
    while the endpoint may still be Updating, and must finish then, not refuse. Its
    description (None when it does not exist); DeploymentFailed / DeploymentTimeout from
    the wait."""
    from .waiter import wait_for_endpoint

    try:
        ep = lc.sm.describe_endpoint(EndpointName=name)
    except Exception as e:
        if not_found(e):
            return None
        raise
    if ep["EndpointStatus"] not in SETTLING:
        return ep
    lc.say(f"{name} is {ep['EndpointStatus']}: waiting for it to settle first")
    return wait_for_endpoint(
        lc.sm,
        name,
        timeout=timeout or 3600,
        on_poll=on_poll,
        poll_initial=lc.poll_initial,
        poll_max=lc.poll_max,
        sleep=lc.sleep,
    )


def finish_update(lc: Any, name: str, *, described: dict[str, Any] | None = None) -> list[str]:
    """Finish what an update of `name` left (module docstring); what it did, one line
    each (empty when nothing was left). `described`: its DescribeEndpoint, when the caller
    has just read it (`wait_settled`), so it is not read twice."""
    from .inventory import resource_users
    from .update import retag_endpoint

    sm = lc.sm
    ep = described
    if ep is None:
        try:
            ep = sm.describe_endpoint(EndpointName=name)
        except Exception as e:
            if not_found(e):
                return []
            raise
    tags = tag_dict(sm.list_tags(ResourceArn=ep["EndpointArn"]).get("Tags", []))
    done: list[str] = []
    found = unfinished_update(sm, ep, tags)
    if found is not None:
        op, made = found  # the tags of the config (or component model) it made
        wanted = [{"Key": k, "Value": v} for k, v in made.items() if k not in OPERATION_KEYS]
        retag_endpoint(lc, ep["EndpointArn"], [*wanted, {"Key": COMPLETED, "Value": op}])
        done.append(f"{name} now carries the spec it serves (update {op} completed)")
    if tags.get(MANAGED) != "true":
        return done
    configs, models = deployment_resources(sm, name)
    users = resource_users(sm)
    for kind, names, arn_key, describe, arg in (
        ("endpoint_config", configs, "EndpointConfigArn", "describe_endpoint_config",
         "EndpointConfigName"),
        ("model", models, "ModelArn", "describe_model", "ModelName"),
    ):  # fmt: skip
        for n in names:
            if n in users:
                continue
            try:
                arn = getattr(sm, describe)(**{arg: n})[arn_key]
            except Exception as e:
                if not_found(e):
                    continue
                raise
            made_by = Operation.from_tags(tag_dict(sm.list_tags(ResourceArn=arn)["Tags"]))
            if made_by is not None and made_by.may_be_running(aws_now(sm)):
                continue  # another run's, still going
            if lc.delete_and_confirm(kind, n):
                done.append(f"removed unused {kind.replace('_', ' ')} {n}")
    if done:  # an update was cut short: a rollout's alarms may be left too (none else)
        from .rollout import remove_stale_rollout_alarms

        done += remove_stale_rollout_alarms(lc, name)
    return done
