"""Changing endpoints in place: `update`, the method of `sm_peagle.Client` in
`ChangeOps`. (`apply` and `diff`, which create or update an endpoint from a spec file,
plan the way `deploy` does and live with it in `ops/deployment.py`; `adopt`, which takes
an endpoint made elsewhere under peagle's management, is `ops/adoption.py`.)

`update` is one SDK call that `peagle update` makes as it is; the CLI only parses and
renders the typed result (`to_dict()` is the `--json` document).

    client = sm_peagle.Client()
    client.update("my-endpoint", k=4)                       # K of a one-model endpoint
    client.update("my-endpoint", component="p-eagle", k=5)  # K of one component
    client.update("my-endpoint", component="baseline", copies=0)

Prompts go through `confirm(question)` (it raises to stop; None proceeds), progress
through the client's `progress` and `on_poll`. Every argument is checked before any AWS
request, with the typed errors the CLI prints (SpecError, exit 2).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import Call, Param, SpecError, text
from ..planning.spec.options import documents_spec_options
from .deployment import refuse_target_only
from .session import Session, check_endpoint_name, seconds
from .update_results import UpdateResult  # re-exported: `sm_peagle.ops.changes.UpdateResult`

if TYPE_CHECKING:
    from ..planning.plan_result import Plan
    from ..planning.spec.options import SpecOptions
    from ..planning.spec.rollout_spec import RolloutSpec

__all__ = [
    "ChangeOps",
    "UpdateResult",
    "refuse_target_only",
]

Confirm = Callable[[str], None]


# -- update ---------------------------------------------------------------------------


def _shown(value: Any) -> str:
    return "none" if value is None else str(value)


class Metavar(str):
    """A placeholder value in an example (`NAME`, `N`): unquoted in both faces, so Python
    reads `component=NAME` and the CLI `--component NAME`."""

    def __repr__(self) -> str:
        return str(self)


_NAME = Metavar("NAME")


_ROLLOUT = ("rollout", "bake")


def _ttl_alone(extra: SpecOptions, *given: Any) -> None:
    """`update --ttl` moves the expiry only: with another change it is refused (exit 2),
    so that what it sends stays the schedules and the tag."""
    rest = dataclasses.replace(extra, ttl=None, ttl_role=None)
    if any(v is not None for v in given) or rest != type(extra)():
        raise SpecError(
            "ttl changes the expiry alone; update it and the rest in two calls",
            remedy=text("run `{u}` by itself", u=Call("update", _NAME, ttl="2h")),
            field="ttl",
        )
    _check_ttl_values(extra.ttl, extra.ttl_role)


def _check_ttl_values(ttl: Any, ttl_role: str | None) -> None:
    """The spec's own rules on `ttl` and `ttl_role` (a role ARN, a duration or UTC time),
    before any request ("none" removes the expiry: no TTL to check)."""
    from pydantic import ValidationError

    from ..planning.spec.model import EndpointSpec

    doc: dict[str, Any] = {"ttl_role": ttl_role}
    if str(ttl).strip().lower() != "none":
        doc["ttl"] = ttl
    try:
        EndpointSpec.model_validate(doc)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else "ttl"
        said = str(err["msg"]).removeprefix("Value error, ")
        raise SpecError(
            text("{p}: {m}", p=Param(field), m=said), field=field, value=str(doc.get(field))
        ) from None


def _check_extra(extra: SpecOptions, component: str | None) -> None:
    """The other spec options of an endpoint update are refused with `component` (its
    update takes k and mode)."""
    from ..planning.spec.options import SPEC_OPTION_NAMES

    # A component's rollout (`rollout`, `bake`) is its UpdateInferenceComponent's
    # DeploymentConfig (design decision 7 of issue 38).
    given = [n for n in SPEC_OPTION_NAMES if getattr(extra, n) is not None and n not in _ROLLOUT]
    if given and component is not None:
        raise SpecError(
            text("update: with {component} it takes {k} and {mode} only, not {given}",
                 given=", ".join(str(Param(n)) for n in given)),
            field=given[0],
            value=getattr(extra, given[0]),
            rule="a component's update changes its K or mode",
        )  # fmt: skip


def _check_update_args(
    name: str,
    k: Any,
    mode: Any,
    instance_type: Any,
    instance_count: Any,
    component: Any,
    copies: Any,
) -> None:
    """The update's arguments, checked by the spec's own validation before any request."""
    from ..planning.spec.loading import spec_from_data

    check_endpoint_name(name)
    speculative = {"mode": mode, "num_speculative_tokens": k}
    endpoint = {"instance_type": instance_type, "instance_count": instance_count}
    doc = {
        "model": "placeholder",
        "speculative": {f: v for f, v in speculative.items() if v is not None},
        "endpoint": {f: v for f, v in endpoint.items() if v is not None},
    }
    spec_from_data(doc)  # SpecError naming the field, as for a spec file
    if component is not None and (not isinstance(component, str) or not component):
        raise SpecError(
            f"update: component is a component name, not {component!r}",
            field="component",
            value=component,
        )
    if copies is not None and (isinstance(copies, bool) or not isinstance(copies, int)):
        raise SpecError(
            f"update: copies is a whole number >= 0, not {copies!r}",
            field="copies",
            value=copies,
            rule="a whole number >= 0",
        )
    if component is not None and (k is not None or mode is not None):
        if copies is not None:
            raise SpecError(
                text(
                    "update: {copies} and {k}/{mode} are separate updates of a component; "
                    "run one, then the other"
                ),
                field="copies",
                value=copies,
                remedy=text(
                    "e.g. `{first}`, then `{second}`",
                    first=Call("update", name, component=_NAME, k=5),
                    second=Call("update", name, component=_NAME, copies=2),
                ),
            )
        if instance_type or instance_count is not None:
            raise SpecError(
                text(
                    "update: {component} changes one component; the instances are the "
                    "endpoint's (a component endpoint's instances cannot be changed in place)"
                ),
                field="instance_type" if instance_type else "instance_count",
                value=instance_type or instance_count,
            )
        return
    if copies is not None and copies < 0:
        raise SpecError(
            text("update: {copies} is the number of copies to keep, 0 or more, not {n}", n=copies),
            field="copies",
            value=copies,
            rule="0 or more",
            remedy=text(
                "`{c}` scales it to zero", c=Call("update", name, component=_NAME, copies=0)
            ),
        )
    if (component is None) != (copies is None):
        raise SpecError(
            text(
                "update: {c} and {n} go together",
                c=Param("component", _NAME),
                n=Param("copies", Metavar("N")),
            ),
            # The field is the one missing: what the caller must add.
            field="component" if component is None else "copies",
            remedy=text("e.g. `{c}`", c=Call("update", name, component="baseline", copies=0)),
        )


def _unchanged(sm: Any, name: str, new: Plan) -> dict[str, Any] | None:
    """The endpoint's description when updating it to `new` would change nothing, else
    None. Nothing changes when the endpoint carries the new spec (its
    `peagle:spec-sha256`): the spec decides every request, and the one `update` reads
    back from the tags plans to the same hash when no option changes it. Then either the
    endpoint runs the config that spec names and its tags are the ones that spec writes,
    complete (the same config and tags: no request), or it runs a config of other
    names (an endpoint `peagle adopt` took over: its spec plans to what it runs, and
    a new model and config of the same content would be churn). Otherwise None, and
    `Lifecycle.update` does what is left, such as marking a deploy that was killed
    while it waited complete (one AddTags) or rewriting tags that lag the spec."""
    from ..lifecycle.spec_tags import tag_dict
    from ..planning.spec.tags import COMPLETED, OPERATION, tagged_requests

    live = sm.describe_endpoint(EndpointName=name)
    tags = tag_dict(sm.list_tags(ResourceArn=live["EndpointArn"]).get("Tags", []))
    if tags.get("peagle:spec-sha256") != new.spec_sha256 or live["EndpointStatus"] != "InService":
        return None  # a change, or an endpoint not to update now (Lifecycle.update says so)
    if live["EndpointConfigName"] != new.names["endpoint_config"]:
        return live
    *_, endpoint_request = tagged_requests(new)
    lagging = [t for t in endpoint_request["Tags"] if tags.get(t["Key"]) != t["Value"]]
    unmarked = bool(tags.get(OPERATION)) and not tags.get(COMPLETED)
    return None if lagging or unmarked else live


def _wanted(lc: Any, asked: Plan) -> Any:
    """The monitoring an update leaves: the option's (`monitor=`) when given, else what is
    live, planned again for the new K (`Lifecycle.update`'s default)."""
    from ..lifecycle.manager import FROM_PLAN

    return asked.monitoring if asked.spec.monitoring is not None else FROM_PLAN


# -- the operations -------------------------------------------------------------------


class ChangeOps(Session):
    """Update (a method of `sm_peagle.Client`)."""

    @documents_spec_options
    def update(
        self,
        name: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        instance_type: str | None = None,
        instance_count: int | None = None,
        component: str | None = None,
        copies: int | None = None,
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
        routing_strategy: str | None = None,
        role: str | None = None,
        hosting: str | None = None,
        scale_to_zero: bool | None = None,
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
        timeout: str | float | None = None,
        confirm: Confirm | None = None,
        dry_run: bool = False,
    ) -> UpdateResult:
        """Change an endpoint in place; nothing changes on error.

        - `k`, `mode`, `instance_type`, `instance_count` (and any other spec option on a
          one-model endpoint): a new model and config, then UpdateEndpoint (the old ones
          are removed only after success).
        - On an endpoint hosting inference components K and mode are per component:
          `component="p-eagle", k=5` gives that component a new model and
          UpdateInferenceComponent; `k`/`mode` without `component` there is a SpecError
          naming the components.
        - `component=..., copies=N`: UpdateInferenceComponentRuntimeConfig (0 scales to
          zero).

        An update whose requests equal the deployed ones sends nothing, tags untouched.

        Args:
            name: the endpoint.
            k: K, the speculative tokens per step.
            mode: "p-eagle", "eagle3" or "baseline".
            instance_type: the instance type (a one-model endpoint).
            instance_count: the instance count (a one-model endpoint).
            component: the inference component to change: its K or mode, or `copies`.
            copies: the copies `component` keeps (0 scales it to zero). Unlike `deploy`'s
                `copies`, it changes one component's running copy count.
            k_schedule: … `ttl_role`: any other spec option (`SpecOptions` documents
                them) for a one-model endpoint; `name`, `components` and `region` cannot
                change in place, so `update` does not take them.
            timeout: give up waiting after this long: "2h", "90m" or seconds.
            confirm: asked with what would change; it raises to stop.
            dry_run: read what is deployed, plan the change and return what would change,
                with no request that changes anything (and no confirm).

        Returns:
            An UpdateResult: `.kind`, `.changes` ("K 5 -> 3", …), `.status`, `.plan`.

        Raises:
            SpecError: a bad value or a bad combination (before any request; `.field`
                names it).
            NotFound: no such endpoint or component.
            DeploymentFailed, DeploymentTimeout: the update failed; the endpoint keeps its
                previous config.
        """
        from ..planning.spec.options import options_from

        _check_update_args(name, k, mode, instance_type, instance_count, component, copies)
        extra = dataclasses.replace(
            options_from(locals()),  # `name` and `copies` here are update's own, not the spec's
            k=None, mode=None, instance_type=None, instance_count=None, copies=None, name=None,
        )  # fmt: skip
        if ttl is not None:
            _ttl_alone(extra, k, mode, instance_type, instance_count, component, copies)
        _check_extra(extra, component)
        wait_s = seconds(timeout, "timeout")
        ctx = self._connect()
        from ..lifecycle.manager import Lifecycle

        lc = Lifecycle(ctx, say=self._say)
        if ttl is not None:  # its schedules and the tag, nothing else
            return self._update_ttl(lc, name, ttl, ttl_role, confirm, dry_run)
        if component is not None and (k is not None or mode is not None):  # its configuration
            return self._update_component(
                lc, name, component, k, mode, wait_s, confirm, dry_run, extra
            )
        if component is not None:  # its copies
            assert copies is not None
            return self._update_copies(lc, name, component, copies, wait_s, confirm, dry_run)
        return self._update_endpoint(lc, name, extra, k, mode, instance_type, instance_count,
                                     wait_s, confirm, dry_run)  # fmt: skip

    def _update_ttl(
        self, lc: Any, name: str, ttl: str | float, ttl_role: str | None,
        confirm: Confirm | None, dry_run: bool,
    ) -> UpdateResult:  # fmt: skip
        """`ttl=`: the expiry moved (from AWS's now), given or removed ("none")."""
        from ..lifecycle.expiry_update import set_ttl

        changes, _, expires = set_ttl(lc, name, ttl, ttl_role, dry_run=True)
        if dry_run:
            return UpdateResult("expiry", name, None, changes, dry_run=True, expires_at=expires)
        if confirm is not None:
            confirm(f"Update {name} ({', '.join(changes)})?")
        changes, written, expires = set_ttl(lc, name, ttl, ttl_role)
        status = lc.sm.describe_endpoint(EndpointName=name)["EndpointStatus"]
        return UpdateResult("expiry", name, status, changes, written, expires_at=expires)

    def _update_component(
        self, lc: Any, name: str, component: str, k: int | None, mode: str | None,
        wait_s: float | None, confirm: Confirm | None, dry_run: bool, extra: SpecOptions,
    ) -> UpdateResult:  # fmt: skip
        """K or mode of one inference component: a new model, UpdateInferenceComponent
        (with a rollout: its RollingUpdatePolicy)."""
        from ..lifecycle.component_update import plan_component_change

        change = plan_component_change(lc.sm, name, component, k=k, mode=mode)
        refuse_target_only(change.plan.spec.model)
        from ..lifecycle.rollout import component_rollout  # (None without rollout=/bake=)

        rollout = None if change.unchanged else component_rollout(lc, name, component, extra)
        if change.unchanged:
            self._say(f"no changes: {component} already runs these values; nothing sent")
            live = None if dry_run else lc.sm.describe_endpoint(EndpointName=name)
            status = live["EndpointStatus"] if live else None
            return UpdateResult("component", name, status, [], dry_run=dry_run, plan=change.plan)
        if dry_run:
            return UpdateResult("component", name, None, list(change.changes), dry_run=True)
        if confirm is not None:
            confirm(f"Update {name} ({', '.join(change.changes) or 'no change'})?")
        result = change.apply(lc, timeout=wait_s, rollout=rollout)
        return UpdateResult(
            "component",
            name,
            result.status,
            list(change.changes),
            list(result.created),
            plan=change.plan,
        )

    def _update_copies(
        self, lc: Any, name: str, component: str, copies: int, wait_s: float | None,
        confirm: Confirm | None, dry_run: bool,
    ) -> UpdateResult:  # fmt: skip
        """One inference component's copy count: UpdateInferenceComponentRuntimeConfig."""
        from ..lifecycle.components import find_component, set_copies
        from ..lifecycle.resources import as_error

        full = find_component(lc.sm, name, component)
        try:
            now = lc.sm.describe_inference_component(InferenceComponentName=full)
        except Exception as exc:
            raise as_error(exc) from None
        was = now.get("RuntimeConfig", {}).get("DesiredCopyCount")
        if was == copies:  # the count it is already asked to keep: nothing to send
            self._say(f"no changes: {component} already has {copies} copies; nothing sent")
            rc = now.get("RuntimeConfig", {})
            return UpdateResult(
                "copies",
                name,
                None if dry_run else now["InferenceComponentStatus"],
                component=full,
                desired_copies=was,
                current_copies=rc.get("CurrentCopyCount"),
                dry_run=dry_run,
            )
        change = [f"copies {was} -> {copies}"]
        if dry_run:
            return UpdateResult(
                "copies", name, None, change, component=component, desired_copies=copies,
                dry_run=True,
            )  # fmt: skip
        if confirm is not None:
            confirm(f"Set {name} component {component} to {copies} copies?")
        desc = set_copies(lc, name, component, copies, wait_s or 3600)
        rc = desc.get("RuntimeConfig", {})
        return UpdateResult(
            "copies",
            name,
            desc["InferenceComponentStatus"],
            change,
            component=desc["InferenceComponentName"],
            desired_copies=rc.get("DesiredCopyCount"),
            current_copies=rc.get("CurrentCopyCount"),
        )

    def _update_monitoring(
        self, lc: Any, name: str, asked: Plan, live: dict[str, Any], confirm: Confirm | None,
        dry_run: bool,
    ) -> UpdateResult | None:  # fmt: skip
        """`monitor=` on an endpoint whose SageMaker side does not change: only the
        CloudWatch Logs and CloudWatch requests that differ (None: none differ)."""
        from ..lifecycle.monitoring import monitoring_changes, read_monitoring, wanted_monitoring

        if asked.spec.monitoring is None:
            return None
        current = read_monitoring(lc.aws, name)
        want = wanted_monitoring(asked, current)
        changes = [
            f"{p}: {_shown(a)} -> {_shown(b)}" for p, a, b in monitoring_changes(current, want)
        ]
        if not changes:
            return None
        result = functools.partial(
            UpdateResult, "endpoint", name, endpoint_config=live["EndpointConfigName"],
            speculative_config=asked.speculative_config, plan=asked,
        )  # fmt: skip
        if dry_run:
            return result(None, changes, dry_run=True)
        if confirm is not None:
            confirm(f"Update {name} ({', '.join(changes)})?")
        done = lc.follow_monitoring(asked, want)
        return result(live["EndpointStatus"], changes, [("monitoring", n) for n in done])

    def _update_endpoint(
        self, lc: Any, name: str, extra: SpecOptions, k: int | None, mode: str | None,
        instance_type: str | None, instance_count: int | None, wait_s: float | None,
        confirm: Confirm | None, dry_run: bool,
    ) -> UpdateResult:  # fmt: skip
        """A one-model endpoint (or a component endpoint's top level): its spec re-planned
        with the options, a new model and config, UpdateEndpoint."""
        from ..lifecycle.resolve import plan
        from ..lifecycle.rollout import planned_rollout, unused
        from ..lifecycle.spec_tags import deployed_spec
        from ..planning.components.change import refuse_top_level_change
        from ..planning.meaning import changed_values, same_meaning
        from ..planning.spec.options import build_spec

        if not dry_run:  # an update cut short after UpdateEndpoint: finish it first
            from ..lifecycle.reconcile import finish_update, wait_settled

            # pasted while Updating: wait, then finish from the description the wait read
            described = wait_settled(lc, name, timeout=wait_s, on_poll=self.on_poll)
            if described is not None:
                for line in finish_update(lc, name, described=described):
                    lc.say(line)
        current = deployed_spec(lc.sm, name)
        refuse_target_only(current.model)
        refuse_top_level_change(current, name, k=k, mode=mode)
        before = plan(current)
        options = dataclasses.replace(
            extra, k=k, mode=mode, instance_type=instance_type, instance_count=instance_count,
        )  # fmt: skip
        base = current.model_dump(mode="json", exclude_unset=True)
        new = plan(build_spec(None, None, options, base=base))
        if new.names["endpoint"] != name:
            # The name only when the spec would not give this one (the default name says the
            # mode): set on a spec that names it by default, it changes the hash and with it
            # the names: an update with nothing to change then made a new model and config.
            options = dataclasses.replace(options, name=name)
            new = plan(build_spec(None, None, options, base=base))
        new.raise_for_failures()
        asked = new  # its monitoring (outside the hash: `new = before` below keeps it)
        if same_meaning(before, new):
            # An explicit value equal to what the deployed spec resolves to (`-k 3` where K
            # was left to the default 3): the same requests under another hash. The
            # deployed spec stands, so nothing is sent and its tags are not rewritten.
            new = before
        changes = changed_values(before, new)
        live = _unchanged(lc.sm, name, new)
        if live is not None:
            monitored = self._update_monitoring(lc, name, asked, live, confirm, dry_run)
            if monitored is not None:
                return monitored
            self._say(f"no changes: {name} already runs this spec; nothing sent{unused(asked)}")
            return UpdateResult(
                "endpoint",
                name,
                None if dry_run else live["EndpointStatus"],
                [],
                endpoint_config=live["EndpointConfigName"],
                speculative_config=new.speculative_config,
                dry_run=dry_run,
                plan=new,
            )
        if dry_run:
            return UpdateResult(
                "endpoint",
                name,
                None,
                changes,
                endpoint_config=new.names["endpoint_config"],
                speculative_config=new.speculative_config,
                dry_run=True,
                rollout=planned_rollout(lc, new),
            )
        if confirm is not None:
            confirm(f"Update {name} ({', '.join(changes) or 'no change'})?")
        result = lc.update(new, timeout=wait_s, on_poll=self.on_poll, monitoring=_wanted(lc, asked))
        return UpdateResult(
            "endpoint",
            name,
            result.status,
            changes,
            list(result.created),
            endpoint_config=new.names["endpoint_config"],
            speculative_config=new.speculative_config,
            plan=new,
            rollout=result.rollout,
        )
