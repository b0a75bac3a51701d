"""Deleting an endpoint: what a delete removes and what it keeps (`plan_deletion`, read
only: `peagle delete --dry-run` shows it), and the delete itself (`delete_endpoint`):
its inference components first, then the endpoint, then the configs and models nothing
else uses, finished through one interrupt. `Lifecycle.deletion` and `Lifecycle.delete`
call these; creating, waiting and rolling back are `lifecycle/manager.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import Call, Interrupted, text
from .resources import models_of, not_found

if TYPE_CHECKING:
    from .manager import Lifecycle
    from .monitoring import MonitoringRemoval

__all__ = ["Deletion", "delete_endpoint", "plan_deletion"]


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
    # peagle's alarm, dashboard, filters, transformer and owned log group: removed after
    # the endpoint is gone (None: the endpoint is not monitored)
    monitoring: MonitoringRemoval | None = None
    # its expiry schedules ("<group>/<name>"), removed first of all
    schedules: list[str] = field(default_factory=list)

    @property
    def endpoint_exists(self) -> bool:
        return self.described is not None

    def to_dict(self) -> dict[str, Any]:
        ep = [self.endpoint] if self.endpoint_exists else []
        return {
            "endpoint": self.endpoint,
            "would_delete": [
                *(f"schedule {k}" for k in self.schedules),
                *self.components,
                *ep,
                *(self.monitoring.names if self.monitoring else []),
                *self.configs,
                *self.models,
            ],
            "kept_models": self.kept_models,
            "kept_shared": self.kept_shared,
        }


def plan_deletion(
    lc: Lifecycle,
    endpoint: str,
    *,
    keep_model: bool = False,
    force: bool = False,
    keep_logs: bool = False,
) -> Deletion | None:
    """What `delete` removes, read only (None: the endpoint and everything of it are gone
    already). The same refusals as `delete`: an endpoint, or a component on it, that peagle
    did not create (SpecError, unless `force`). A config or model something else uses is
    kept, and so is the model of a component peagle did not create. Its expiry schedules
    that exist are listed (removed first)."""
    from .expiry import existing_schedules

    plan = _plan_resources(lc, endpoint, keep_model=keep_model, force=force, keep_logs=keep_logs)
    schedules = existing_schedules(lc, endpoint, plan.components if plan else [])
    if plan is None and schedules:
        plan = _nothing_but_schedules(endpoint)
    if plan is not None:
        plan.schedules = schedules
    return plan


def _nothing_but_schedules(endpoint: str) -> Deletion:
    return Deletion(
        endpoint=endpoint, described=None, components=[], configs=[], models=[],
        kept_models=[], kept_shared={}, kept_component_models=[],
    )  # fmt: skip


def _plan_resources(
    lc: Lifecycle, endpoint: str, *, keep_model: bool, force: bool, keep_logs: bool
) -> Deletion | None:
    from botocore.exceptions import ClientError

    from ..errors import SpecError
    from .components import component_models, split_components
    from .inventory import is_managed, resource_users

    try:
        desc = lc.sm.describe_endpoint(EndpointName=endpoint)
    except ClientError as e:
        if not_found(e):
            return _leftovers(lc, endpoint, keep_model=keep_model, keep_logs=keep_logs)
        raise
    if not force and not is_managed(lc.sm, desc["EndpointArn"]):
        raise SpecError(
            f"endpoint {endpoint} was not created by peagle (no peagle:managed tag); "
            "nothing was deleted",
            remedy=text("`{d}` if you mean it", d=Call("delete", endpoint, force=True, yes=False)),
            field="name",
            value=endpoint,
        )
    configs = [desc["EndpointConfigName"]]
    pending = (desc.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
    if pending:
        configs.append(pending)
    models: list[str] = []
    for cfg in configs:
        models += models_of(lc.sm, cfg)
    mine, foreign = split_components(lc.sm, endpoint)
    if foreign and not force:
        raise SpecError(
            f"endpoint {endpoint} also hosts inference component(s) peagle did not "
            f"create: {', '.join(foreign)}; deleting the endpoint would destroy them; "
            "nothing was deleted",
            remedy=text("`{d}` if you mean it", d=Call("delete", endpoint, force=True, yes=False)),
            field="name",
            value=endpoint,
        )
    theirs = component_models(lc.sm, foreign)
    models += [m for m in component_models(lc.sm, mine) if m not in theirs]
    # Never delete a config or model another endpoint (or its components) still uses;
    # this endpoint's own components go first, so they do not count.
    users = resource_users(lc.sm, skip=endpoint)
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
        monitoring=_monitoring(lc, endpoint, keep_logs),
    )


def _monitoring(lc: Lifecycle, endpoint: str, keep_logs: bool) -> MonitoringRemoval | None:
    """What deleting `endpoint` removes of its monitoring. A caller who may not read
    CloudWatch (or a server without the calls) deletes the endpoint all the same: its
    monitoring, if any, is named as not checked."""
    from botocore.exceptions import BotoCoreError, ClientError

    from .monitoring import plan_removal

    try:
        return plan_removal(lc.aws, endpoint, keep_logs=keep_logs)
    except (ClientError, BotoCoreError) as e:
        lc.say(f"warning: monitoring of {endpoint} not checked: {e}")
        return None


def _leftovers(
    lc: Lifecycle, endpoint: str, *, keep_model: bool, keep_logs: bool = False
) -> Deletion | None:
    """The endpoint is gone (deleted by hand, or a delete or rollback interrupted after
    DeleteEndpoint): the configs and models peagle tagged with this deployment
    (`peagle:deployment`) that nothing else uses, and its monitoring. None when there are
    none."""
    from .inventory import resource_users
    from .resources import deployment_resources

    configs, models = deployment_resources(lc.sm, endpoint)
    users = resource_users(lc.sm)
    shared = {n: sorted(users[n]) for n in [*configs, *models] if n in users}
    configs = [c for c in configs if c not in shared]
    free_models = [m for m in models if m not in shared]
    monitoring = _monitoring(lc, endpoint, keep_logs)
    if not configs and not free_models and (monitoring is None or not monitoring.names):
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
        monitoring=monitoring,
    )


def delete_endpoint(
    lc: Lifecycle,
    endpoint: str,
    *,
    keep_model: bool = False,
    force: bool = False,
    keep_logs: bool = False,
) -> dict[str, Any]:
    """Delete an endpoint (its components first), then its monitoring (`keep_logs`: not
    the log group peagle made), then the config and models it uses that nothing else
    uses (`deletion` says which, and what is refused)."""
    from .components import deregister_component_scaling
    from .expiry import remove_schedules
    from .monitoring import remove_monitoring

    plan = plan_deletion(lc, endpoint, keep_model=keep_model, force=force, keep_logs=keep_logs)
    if plan is None:
        return {"endpoint": endpoint, "deleted": [], "note": "already gone"}
    if (
        not plan.endpoint_exists
        and not plan.configs
        and not plan.models
        and (plan.monitoring is None or not plan.monitoring.names)
    ):
        gone = remove_schedules(lc, endpoint, plan.components, plan.schedules)
        return {"endpoint": endpoint, "deleted": gone, "note": "already gone; removed its schedule"}
    deleted: list[str] = []

    def remove(kind: str, name: str) -> None:
        if kind == "inference_component":
            deregister_component_scaling(lc, name)
        elif kind == "endpoint":
            lc.deregister_autoscaling(endpoint, plan.described or {})
        elif kind == "monitoring":
            deleted.extend(remove_monitoring(lc.aws, name, say=lc.say, removal=plan.monitoring))
            return
        elif kind == "schedule":
            deleted.extend(remove_schedules(lc, endpoint, plan.components, [name]))
            return
        if lc.delete_and_confirm(kind, name):
            deleted.append(name)

    # SageMaker refuses DeleteEndpoint while components remain: they go first.
    steps = [("inference_component", n) for n in plan.components]
    if plan.described is None:
        lc.say(f"endpoint {endpoint} was already gone; removing what it left")
    else:
        steps.append(("endpoint", endpoint))
    # Its expiry schedules once the endpoint is gone, not before: a delete that fails or is
    # stopped earlier leaves the endpoint with its expiry. One firing meanwhile meets a
    # Deleting endpoint and changes nothing.
    steps += [("schedule", key) for key in plan.schedules]
    if plan.monitoring is not None:  # after the endpoint: it writes to the log group
        steps.append(("monitoring", endpoint))
    steps += [("endpoint_config", c) for c in plan.configs]
    steps += [("model", m) for m in plan.models]
    for model in plan.kept_component_models:
        lc.say(f"kept model {model}: an inference component peagle did not create named it")
    interrupted = _finish(lc, steps, remove, endpoint)
    if deleted:  # one line for all: the CLI prints nothing more
        lc.say(f"deleted {', '.join(deleted)}")
    for name, eps in plan.kept_shared.items():
        lc.say(f"kept {name}: endpoint {', '.join(eps)} uses it")
    if interrupted is not None:
        raise interrupted
    return {
        "endpoint": endpoint,
        "deleted": deleted,
        "kept_models": plan.kept_models,
        "kept_shared": plan.kept_shared,
    }


def _finish(
    lc: Lifecycle,
    steps: list[tuple[str, str]],
    remove: Callable[[str, str], None],
    endpoint: str,
) -> KeyboardInterrupt | None:
    """Run the deletions to the end, even through one interrupt: a delete cut short
    leaves a config and models no endpoint uses, and nothing can put the endpoint
    back, so the first Ctrl-C (or SIGTERM) finishes the job (returned, to re-raise
    then). A second stops at once, naming what is left and the command that ends it."""
    first: KeyboardInterrupt | None = None
    i = 0
    while i < len(steps):
        try:
            remove(*steps[i])
            i += 1
        except KeyboardInterrupt as e:
            if first is None:
                first = e
                lc.say(f"interrupted: finishing the delete of {endpoint} (again to stop now)")
                continue  # the step again: delete_and_confirm is idempotent
            raise Interrupted(
                "delete stopped",
                steps[i:],
                Call("delete", endpoint),
                region=getattr(lc.aws, "region", None),
            ) from e
    return first
