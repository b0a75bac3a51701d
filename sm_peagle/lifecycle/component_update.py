"""Update a component endpoint in place from a new plan (`peagle update`, `peagle apply`).

Per component: a new configuration (mode, K, image, environment) gets a new model and
UpdateInferenceComponent pointing at it, then the old model is removed once the component
is InService again; a new component is created; a peagle component the plan no longer
has is removed (scaling first). A component someone else added to the endpoint (no
peagle:managed tag) is never changed or removed, nor is its model. The instances
themselves (instance type, managed instance scaling) are the endpoint config's: peagle
refuses to change them in place (exit 2, before any request), because it has no tested
path for UpdateEndpoint under live components (moto implements none, and no AWS source
we hold says what happens to the components then); delete and deploy instead.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import Call, Interrupted, InterruptedAfterChange, PeagleError, SpecError, text
from ..planning.plan_result import Plan
from .components import (
    deregister_component_scaling,
    register_component_scaling,
    split_components,
    tagged_components,
    wait_for_component,
)
from .operation import COMPLETED, Operation
from .resources import DeployResult, as_error, describe_existing, tagged_requests
from .update import retag_endpoint

__all__ = ["ComponentChange", "plan_component_change", "update_components"]

_HOST_KEYS = ("InstanceType", "InitialInstanceCount", "ManagedInstanceScaling", "VolumeSizeInGB")


def _same_container(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("Image", "Environment", "ModelDataSource", "AdditionalModelDataSources")
    return all(a.get(k) == b.get(k) for k in keys)


def _check_hosts(lc: Any, plan: Plan, config_name: str) -> None:
    live = lc.sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]
    want = plan.create_endpoint_config["ProductionVariants"][0]
    changed = [k for k in _HOST_KEYS if live.get(k) != want.get(k)]
    if changed:
        raise SpecError(
            f"{plan.names['endpoint']}: {', '.join(changed)} of a component endpoint cannot "
            "be changed in place by peagle",
            remedy=text(
                "`{delete}`, then deploy the new spec",
                delete=Call("delete", plan.names["endpoint"]),
            ),
        )


class _ModelUsers:
    """Who still uses a model, for retiring the old ones. Everything except peagle's own
    components on this endpoint (other endpoints, their configs and components, and the
    foreign components here) is scanned once, on first need: an update changes none of it.
    What peagle's components here name changes as each is created, updated or removed, so
    it is tracked in `mine`, not read from that one scan."""

    def __init__(self, lc: Any, endpoint: str, mine: dict[str, str | None]) -> None:
        self.lc, self.endpoint, self.mine = lc, endpoint, mine
        self._others: dict[str, set[str]] | None = None

    def of(self, model: str) -> set[str]:
        if self._others is None:
            from .inventory import resource_users

            self._others = resource_users(self.lc.sm, skip_components=frozenset(self.mine))
        users = set(self._others.get(model, ()))
        if model in self.mine.values():
            users.add(self.endpoint)
        return users


@dataclass(frozen=True)
class ComponentChange:
    """One component's K/mode change, planned: the new plan, what changes (`component
    p-eagle: K 7 -> 5`), and whether the scale-to-zero requests stay as they were."""

    plan: Plan
    changes: list[str]
    same_scaling: bool
    unchanged: bool = False  # the component already runs these values: nothing to send
    # (component, k, mode) it was planned from: to plan it again from what is deployed
    asked: tuple[str, int | None, str | None] | None = None

    def apply(self, lc: Any, *, timeout: float | None = None, rollout: Any = None) -> DeployResult:
        """Finish an earlier update cut short first (`lifecycle.reconcile`): it rewrites
        the endpoint's spec, which this change was planned from, so plan it again then."""
        change = self
        done = _finish_earlier(lc, self.plan.names["endpoint"])
        if done and self.asked is not None:
            component, k, mode = self.asked
            change = plan_component_change(
                lc.sm, self.plan.names["endpoint"], component, k=k, mode=mode
            )
        return update_components(
            lc,
            change.plan,
            timeout=timeout,
            register_scaling=not change.same_scaling,
            rollout=rollout,
        )


def plan_component_change(
    sm: Any, endpoint: str, component: str, *, k: int | None, mode: str | None
) -> ComponentChange:
    """The deployed spec (its tags) with `component`'s K and/or mode replaced, planned.
    SpecError (nothing sent) for an endpoint without components, an unknown component,
    a K for a baseline component, or a plan that fails its checks."""
    from ..planning.components.change import change_component, component_changes
    from ..planning.meaning import same_meaning
    from .resolve import plan
    from .spec_tags import deployed_spec

    current = deployed_spec(sm, endpoint)
    new = plan(change_component(current, endpoint, component, k=k, mode=mode))
    new.raise_for_failures()
    old = plan(current)
    if same_meaning(old, new):  # the values it runs: the deployed spec stands, tags and all
        return ComponentChange(old, [], True, unchanged=True)
    return ComponentChange(
        new,
        component_changes(old, new),
        old.autoscaling == new.autoscaling,
        asked=(component, k, mode),
    )


def update_components(
    lc: Any,
    plan: Plan,
    *,
    timeout: float | None = None,
    register_scaling: bool = True,
    rollout: Any = None,
) -> DeployResult:
    """Bring peagle's live components to the plan's; returns what was created. With
    `register_scaling` False the plan's scale-to-zero requests are not re-sent: for a
    change of one component's K or mode, which leaves every scaling request as it was
    (`peagle update --component NAME -k N` checks that), so no other component sees one.

    An operation, as an endpoint update is (`lifecycle.update`): what it creates carries
    its tags, and once done it marks the endpoint complete with it; a component update
    cut short after its UpdateInferenceComponent reached SageMaker is finished by the next
    update or gc (`lifecycle.reconcile`), which runs first here too. Stopped before that,
    it removes what it made; stopped a second time, it names what is left."""
    plan.raise_for_failures()
    name = plan.names["endpoint"]
    current = describe_existing(lc.sm, name)
    _check_hosts(lc, plan, current["EndpointConfigName"])
    mine, foreign = split_components(lc.sm, name)
    models, requests = tagged_components(plan)
    taken = [
        r["InferenceComponentName"] for r in requests if r["InferenceComponentName"] in foreign
    ]
    if taken:
        raise SpecError(
            f"{name}: inference component(s) {', '.join(taken)} were not created by peagle; "
            "nothing was changed",
            remedy="remove them, or rename the plan's components",
        )
    _finish_earlier(lc, name)  # an earlier update cut short: finish it first
    start, limit = time.monotonic(), timeout or 7200
    op = Operation.start(limit, lc.aws.synced_aws_now())
    models, requests = [op.stamp(m) for m in models], [op.stamp(r) for r in requests]
    run = _Run(lc, name, current["EndpointArn"], op)
    # The rollout: `--rollout` given with `--component`, else the spec's (apply).
    run.rollout_spec = rollout if rollout is not None else plan.spec.endpoint.rollout
    done = f"component update of {name} completed"
    try:
        _change(lc, plan, name, mine, foreign, models, requests, run, limit, register_scaling)
        run.complete(tagged_requests(plan)[2]["Tags"])
    except (Exception, KeyboardInterrupt) as exc:
        err = as_error(exc)
        completed = run.settle(tagged_requests(plan)[2]["Tags"], limit)
        if isinstance(exc, KeyboardInterrupt):
            if completed:  # it took effect and the clean-up ran: say so (`lifecycle.update`)
                raise InterruptedAfterChange(done) from exc
            raise
        raise err from None
    finally:
        op.end()
    try:
        desc = lc.sm.describe_endpoint(EndpointName=name)
    except KeyboardInterrupt as exc:  # everything is done; only the status read was cut
        raise InterruptedAfterChange(done) from exc
    return DeployResult(name, desc["EndpointStatus"], run.created, time.monotonic() - start, desc)


def _finish_earlier(lc: Any, name: str) -> list[str]:
    """Finish an earlier update of `name` that took effect and never completed (said, and
    returned, one line each). Only when there is one (`unfinished.unfinished_update`):
    finishing also looks for unused configs and models, a scan of the whole account
    that an update with nothing to finish must not pay for."""
    from .reconcile import finish_update
    from .spec_tags import tag_dict
    from .unfinished import unfinished_update

    ep = describe_existing(lc.sm, name)
    tags = tag_dict(lc.sm.list_tags(ResourceArn=ep["EndpointArn"]).get("Tags", []))
    if unfinished_update(lc.sm, ep, tags) is None:
        return []
    done = finish_update(lc, name)
    for line in done:
        lc.say(line)
    return done


def _change(
    lc: Any,
    plan: Plan,
    name: str,
    mine: list[str],
    foreign: list[str],
    models: list[dict[str, Any]],
    requests: list[dict[str, Any]],
    run: _Run,
    limit: float,
    register_scaling: bool,
) -> None:
    specs = {ic: lc.sm.describe_inference_component(InferenceComponentName=ic) for ic in mine}
    users = _ModelUsers(
        lc, name, {ic: d["Specification"].get("ModelName") for ic, d in specs.items()}
    )
    run.users = users
    by_name = {m["ModelName"]: m for m in models}
    # What differs, read before anything is sent: a run stopped part-way knows whether
    # the components it did not reach needed a change (then it is not complete).
    changing = [
        r
        for r in requests
        if r["InferenceComponentName"] not in specs
        or not _same(lc, specs[r["InferenceComponentName"]], r, by_name)
    ]
    run.todo = {r["InferenceComponentName"] for r in changing}
    if run.rollout_spec is not None:  # planned before anything is sent (SpecError, exit 2)
        from .rollout import component_rollouts

        live = {r["InferenceComponentName"]: specs[r["InferenceComponentName"]]
                for r in changing if r["InferenceComponentName"] in specs}  # fmt: skip
        run.rollouts = component_rollouts(lc, run.rollout_spec, name, live)
    for req in changing:
        ic = req["InferenceComponentName"]
        run.todo.discard(ic)  # its change, once sent, is `switching`'s until it is done
        if ic not in specs:
            model = by_name[req["Specification"]["ModelName"]]
            run.create("model", model["ModelName"], lc.sm.create_model, model)
            run.create("inference_component", ic, lc.sm.create_inference_component, req)
            users.mine[ic] = req["Specification"].get("ModelName")
            wait_for_component(lc, ic, timeout=limit)
            continue
        _update_one(lc, specs[ic], req, by_name, run, limit, users)
    for ic in sorted(set(mine) - {r["InferenceComponentName"] for r in requests}):
        run.changed = True
        deregister_component_scaling(lc, ic)
        lc.delete_and_confirm("inference_component", ic)
        lc.say(f"removed inference component {ic}")
        old = users.mine.pop(ic)
        if old:
            _retire_model(lc, old, users)
    for ic in foreign:
        lc.say(f"kept inference component {ic}: not peagle's")
    if plan.autoscaling and register_scaling:
        register_component_scaling(lc, plan, [])


def _same_inline(live: dict[str, Any], spec: dict[str, Any]) -> bool:
    """Whether a component's inline container (DescribeInferenceComponent's summary: the
    image under DeployedImage.SpecifiedImage) is the one the plan asks for."""
    want = spec.get("Container") or {}
    image = (live.get("DeployedImage") or {}).get("SpecifiedImage", live.get("Image"))
    return (
        image == want.get("Image")
        and (live.get("Environment") or {}) == (want.get("Environment") or {})
        and live.get("ArtifactUrl") == want.get("ArtifactUrl")
    )


def _same(
    lc: Any, live: dict[str, Any], req: dict[str, Any], models: dict[str, dict[str, Any]]
) -> bool:
    """Whether a live component already has the configuration the plan asks for."""
    old_model = live["Specification"].get("ModelName")
    new_model = req["Specification"].get("ModelName")
    if old_model and new_model:
        old = lc.sm.describe_model(ModelName=old_model)["PrimaryContainer"]
        return _same_container(old, models[new_model]["PrimaryContainer"])
    if not old_model and not new_model:  # an inline container (no model) both times
        return _same_inline(live["Specification"].get("Container") or {}, req["Specification"])
    return False


def _update_one(
    lc: Any,
    live: dict[str, Any],
    req: dict[str, Any],
    models: dict[str, dict[str, Any]],
    run: _Run,
    limit: float,
    users: _ModelUsers,
) -> None:
    """A new model for the component's changed configuration, and the component on it."""
    ic = live["InferenceComponentName"]
    old_model = live["Specification"].get("ModelName")
    new_model = req["Specification"].get("ModelName")
    if new_model:  # an inline container has no model to create
        run.create("model", new_model, lc.sm.create_model, models[new_model])
    # From here SageMaker may be switching the component, whatever we hear back.
    run.switching[ic] = (old_model, new_model)
    run.changed = True
    users.mine[ic] = new_model  # the old model is no longer this component's to keep
    rp = run.rollouts.get(ic)  # a component rollout (design decision 7): RollingUpdatePolicy
    extra = {"DeploymentConfig": rp.deployment_config} if rp and rp.deployment_config else {}
    lc.sm.update_inference_component(
        InferenceComponentName=ic, Specification=req["Specification"], **extra
    )
    how = f" ({rp.strategy} rollout)" if extra else ""
    lc.say(f"updating inference component {ic}: {old_model} -> {new_model}{how}")
    desc = wait_for_component(lc, ic, timeout=max(limit, rp.wait_s if extra else 0))
    if extra and new_model and desc["Specification"].get("ModelName") != new_model:
        from .rollout_finish import component_rolled_back

        raise component_rolled_back(lc, ic, rp, old_model)
    if old_model:
        _retire_model(lc, old_model, users)
    run.switching.pop(ic)


class _Run:
    """One component update's progress, for finishing or undoing it when it is stopped:
    what it created, and the components whose UpdateInferenceComponent was sent and whose
    old model is not retired yet (`switching`: component -> (old model, new model))."""

    def __init__(self, lc: Any, name: str, arn: str, op: Operation) -> None:
        self.lc, self.name, self.arn, self.op = lc, name, arn, op
        self.created: list[tuple[str, str]] = []
        self.trying: list[tuple[str, str]] = []  # the Create* in flight
        self.switching: dict[str, tuple[str | None, str | None]] = {}
        self.changed = False  # anything sent that changes the endpoint's components
        self.todo: set[str] = set()  # components the plan names not yet brought to it
        self.users: _ModelUsers | None = None
        self.rollout_spec: Any = None  # the RolloutSpec (`--rollout`, `endpoint.rollout`)
        self.rollouts: dict[str, Any] = {}  # component -> its RolloutPlan

    def create(
        self, kind: str, name: str, send: Callable[..., Any], request: dict[str, Any]
    ) -> None:
        """Send a Create* for `name`, in flight in `trying` until SageMaker answers."""
        self.trying[:] = [(kind, name)]
        send(**request)
        self.created.append(self.trying.pop())
        self.changed = True

    def complete(self, tags: list[dict[str, str]]) -> None:
        """The endpoint takes the new spec's tags and, when anything changed, the mark
        that this operation completed (`peagle:completed`): without it, the new model's
        operation tag tells `status`, `update` and `gc` the update never finished. An
        update that changed nothing writes nothing."""
        mark = [{"Key": COMPLETED, "Value": self.op.id}] if self.changed or self.switching else []
        retag_endpoint(self.lc, self.arn, [*tags, *mark])

    def settle(self, tags: list[dict[str, str]], limit: float) -> bool:
        """Stopped or failed. Before any component was sent a change: remove what this
        run made (its models; `Lifecycle.rollback`). After: SageMaker goes on whatever we
        do, so wait for each component to settle, then finish (retire the old model,
        retag) where it took the new model, and remove the new model where it did not. A
        second interrupt stops that and names what is left, with the command that
        finishes it (`peagle update NAME --yes`, which reconciles first). True when
        every component took its change and the endpoint was marked complete."""
        if not self.changed:  # only models made: remove them (and a Create* in flight)
            self.lc.rollback(self.created, self.name, op=self.op, in_flight=self.trying)
            return False
        left: list[tuple[str, str]] = []
        settled: set[str] = set()  # components SageMaker is done with: on their new model
        try:
            landed = True
            for ic, (old, new) in list(self.switching.items()):
                now = _settled_model(self.lc, ic, limit)
                if now == new:
                    settled.add(ic)
                    if old and self.users is not None:
                        _retire_model(self.lc, old, self.users)
                    self.switching.pop(ic)
                    continue
                landed = False
                if new and now != new:  # SageMaker kept (or went back to) the old model
                    self.lc.delete_and_confirm("model", new)
                    self.switching.pop(ic)
            if landed and not self.todo:
                self.complete(tags)
                return True
            self.lc.say(
                f"{self.name}: a component did not take its new configuration; "
                "the endpoint's tags still describe the old spec"
            )
            return False
        except KeyboardInterrupt as stop:
            for ic, (old, new) in self.switching.items():
                left += [("model", m) for m in (old, None if ic in settled else new) if m]
            unsettled = set(self.switching) - settled
            raise Interrupted(
                "component update stopped",
                [("endpoint_tags", self.name), *left],
                Call("update", self.name),
                effect="finishes the update: the endpoint takes its tags, the unused ones go",
                operation=self.op.id,
                region=getattr(self.lc.aws, "region", None),
                note=(
                    "a component may still be switching: its old model or its new one is left"
                    if unsettled
                    else None
                ),
            ) from stop


def _settled_model(lc: Any, ic: str, limit: float) -> str | None:
    """The model the component names once SageMaker is done with it (InService, or
    Failed: it may have gone back to the old one)."""
    with contextlib.suppress(PeagleError):
        wait_for_component(lc, ic, timeout=limit)
    desc = lc.sm.describe_inference_component(InferenceComponentName=ic)
    return desc["Specification"].get("ModelName")


def _retire_model(lc: Any, model: str, users: _ModelUsers) -> None:
    """Delete a model its component no longer names, unless something else still uses it
    (an endpoint config, or any inference component: another endpoint's or a sibling)."""
    using = users.of(model)
    if using:
        lc.say(f"kept old model {model}: {', '.join(sorted(using))} uses it")
        return
    lc.delete_and_confirm("model", model)
    lc.say(f"removed old model {model}")
