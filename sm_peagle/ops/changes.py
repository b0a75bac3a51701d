"""Changing endpoints: `update`, `apply`/`diff` (a spec file in git), `adopt`, and the
refusal of sandbox-only models outside the sandbox.

Each is one SDK call that `peagle update|apply|diff|adopt` makes as it is; the CLI
only parses and renders the typed result (`to_dict()` is the `--json` document).

    sm_peagle.update("my-endpoint", k=4)                       # K of a one-model endpoint
    sm_peagle.update("my-endpoint", component="p-eagle", k=5)  # K of one component
    sm_peagle.update("my-endpoint", component="baseline", copies=0)
    print(sm_peagle.diff("spec.yaml").action)                  # create | update | noop
    sm_peagle.apply("spec.yaml")

Prompts go through `confirm(question)` (it raises to stop; None proceeds), progress
through `say` and `on_poll`. Every argument is checked before any AWS request, with
the typed errors the CLI prints (SpecError, exit 2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from .session import (
    OnConnect,
    Say,
    check_endpoint_name,
    check_output_path,
    context,
    quiet,
    seconds,
)

if TYPE_CHECKING:
    from ..lifecycle.adopt import AdoptResult
    from ..lifecycle.apply import ApplyPlan
    from ..planning.plan_result import Plan

__all__ = [
    "ApplyResult",
    "UpdateResult",
    "adopt",
    "apply",
    "diff",
    "refuse_sandbox_only",
    "update",
]

Confirm = Callable[[str], None]


def refuse_sandbox_only(model: str | None, *, say: Say | None = None) -> None:
    """A sandbox-only model (tiny-llama, registered by the sandbox) deploys only into the
    sandbox: its weights exist nowhere else. Outside it: SpecError naming the sandbox,
    before any request. Inside it: `say` which engine serves it."""
    from .. import settings
    from ..catalog.models import find_model

    entry = find_model(model) if model else None
    if entry is None or not entry.sandbox_only:
        return
    if settings.sandbox_url():
        engine = settings.sandbox_engine_label()
        (say or quiet)(
            f"{entry.alias}: sandbox-only tiny model, served by the sandbox's {engine} engine"
        )
        return
    raise SpecError(
        f"{entry.alias} is a sandbox-only model: its weights exist only in the peagle "
        "sandbox, not on AWS",
        remedy=f"peagle --sandbox deploy {entry.alias} ... (--sandbox-engine vllm for the "
        "real vLLM engine), or peagle_sandbox.use_sandbox() in Python",
    )


# -- update ---------------------------------------------------------------------------


@dataclass
class UpdateResult:
    """What `update` did. `kind`: "endpoint" (K, mode or instances of a one-model
    endpoint), "component" (K or mode of one inference component) or "copies" (an
    inference component's copy count). `changes`: "K 5 -> 3", ... (empty: nothing to
    change)."""

    kind: str
    endpoint: str
    status: str | None  # None for a dry run: nothing was asked of the endpoint
    changes: list[str] = field(default_factory=list)
    created: list[tuple[str, str]] = field(default_factory=list)
    endpoint_config: str | None = None
    speculative_config: dict | None = None
    component: str | None = None
    desired_copies: int | None = None
    current_copies: int | None = None
    dry_run: bool = False
    plan: Plan | None = field(default=None, repr=False)  # the endpoint's new plan

    @property
    def changed(self) -> bool:
        """True when the update asked SageMaker for a change: resources were created, or an
        inference component's copy count was set (`changes` names it). False for a dry run and
        when nothing was to change."""
        if self.dry_run:
            return False
        return bool(self.created) if self.kind != "copies" else bool(self.changes)

    @property
    def scaled_to_zero(self) -> bool:
        """True when an inference component's copies were set to 0 and none remain."""
        return self.desired_copies == 0 and self.current_copies == 0

    def __getitem__(self, key: str) -> Any:
        """`result["status"]`, as `Endpoint.update` returned before; `result["created"]`
        is the created resources' names, as it was then."""
        if key == "created":
            return [n for _, n in self.created]
        return self.to_dict()[key]

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle update --json` prints."""
        if self.kind == "copies":
            return {
                "endpoint": self.endpoint,
                "component": self.component,
                "status": self.status,
                "changed": self.changed,
                "desired_copies": self.desired_copies,
                "current_copies": self.current_copies,
                "scaled_to_zero": self.scaled_to_zero,
                **({"dry_run": True} if self.dry_run else {}),
            }
        doc: dict[str, Any] = {"endpoint": self.endpoint, "status": self.status}
        if self.dry_run:
            doc["dry_run"] = True
        if self.kind == "endpoint":
            doc["endpoint_config"] = self.endpoint_config
        doc["changed"] = self.changed
        doc["changes"] = self.changes
        if self.kind == "endpoint":
            doc["speculative_config"] = self.speculative_config
        else:
            doc["created"] = [{"kind": kind, "name": n} for kind, n in self.created]
        return doc


def _check_spec_options(spec_options: dict[str, Any], component: str | None) -> Any:
    """The other spec options of an endpoint update, as SpecOptions (unknown names: the
    SpecError `plan` gives), refused with `component` (its update takes k and mode)."""
    from ..planning.spec.options import SpecOptions

    if spec_options and component is not None:
        raise SpecError(
            f"update(component=...) takes k= and mode= only, not {sorted(spec_options)}"
        )
    for own in ("name", "components"):
        if own in spec_options:
            raise SpecError(f"update: {own}= cannot change in place")
    return SpecOptions.from_keywords(spec_options)


def _check_update_args(
    name: str,
    k: Any,
    mode: Any,
    instance_type: Any,
    instance_count: Any,
    component: Any,
    copies: Any,
    cli: bool,
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
        raise SpecError(f"update: component is a component name, not {component!r}")
    if copies is not None and (isinstance(copies, bool) or not isinstance(copies, int)):
        raise SpecError(f"update: copies is a whole number >= 0, not {copies!r}")
    flags = (
        ("--component NAME", "--copies", "-k", "--mode")
        if cli
        else ("component=NAME", "copies=", "k=", "mode=")
    )
    if component is not None and (k is not None or mode is not None):
        if copies is not None:
            raise SpecError(
                f"update: {flags[1]} and {flags[2]}/{flags[3]} are separate updates of a "
                "component; run one, then the other",
                remedy=f"e.g. `peagle update {name} --component NAME -k 5`, then "
                f"`peagle update {name} --component NAME --copies 2`",
            )
        if instance_type or instance_count is not None:
            raise SpecError(
                f"update: {flags[0].split()[0]} changes one component; the instances are the "
                "endpoint's (a component endpoint's instances cannot be changed in place)"
            )
        return
    if copies is not None and copies < 0:
        raise SpecError(
            f"update: {flags[1]} is the number of copies to keep, 0 or more, not {copies}",
            remedy=f"`peagle update {name} --component NAME --copies 0` scales it to zero",
        )
    if (component is None) != (copies is None):
        raise SpecError(
            f"update: {flags[0]} and {flags[1]} N go together",
            remedy=f"e.g. `peagle update {name} --component baseline --copies 0`",
        )


def update(
    name: str,
    *,
    k: int | None = None,
    mode: str | None = None,
    instance_type: str | None = None,
    instance_count: int | None = None,
    component: str | None = None,
    copies: int | None = None,
    timeout: str | float | None = None,
    confirm: Confirm | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
    on_poll: Callable[[Any], None] | None = None,
    dry_run: bool = False,
    _cli: bool = False,
    **spec_options: Any,
) -> UpdateResult:
    """Change an endpoint in place; nothing changes on error.

    - `k`, `mode`, `instance_type`, `instance_count`: a new model and config, then
      UpdateEndpoint (the old ones are removed only after success).
    - On an endpoint hosting inference components K and mode are per component:
      `component="p-eagle", k=5` gives that component a new model and
      UpdateInferenceComponent; `k`/`mode` without `component` there is a SpecError
      naming the components.
    - `component=..., copies=N`: UpdateInferenceComponentRuntimeConfig (0 scales to zero).

    `timeout`: "2h", "90m" or seconds. `confirm` is asked with what would change.
    `dry_run`: read what is deployed, plan the change and return what would change, with
    no request that changes anything (and no confirm).
    `spec_options`: any other option of the spec for a one-model endpoint (image=,
    vllm_version=, drafter=, autoscale=, …, as `sm_peagle.plan` takes them).
    An update whose requests equal the deployed ones (`k=3` where K is the default 3)
    sends nothing and leaves the tags as they are.
    SpecError (before any request) for a bad value or a bad combination."""
    _check_update_args(name, k, mode, instance_type, instance_count, component, copies, _cli)
    extra = _check_spec_options(spec_options, component)
    wait_s = seconds(timeout, "timeout")
    ctx = context(region, aws, on_connect)
    from ..lifecycle.manager import Lifecycle

    lc = Lifecycle(ctx, say=say or quiet)
    ask = confirm or quiet
    if component is not None and (k is not None or mode is not None):  # its configuration
        from ..lifecycle.component_update import plan_component_change

        change = plan_component_change(lc.sm, name, component, k=k, mode=mode)
        refuse_sandbox_only(change.plan.spec.model)
        if change.unchanged:
            (say or quiet)(f"no changes: {component} already runs these values; nothing sent")
            live = None if dry_run else lc.sm.describe_endpoint(EndpointName=name)
            status = live["EndpointStatus"] if live else None
            return UpdateResult("component", name, status, [], dry_run=dry_run, plan=change.plan)
        if dry_run:
            return UpdateResult("component", name, None, list(change.changes), dry_run=True)
        ask(f"Update {name} ({', '.join(change.changes) or 'no change'})?")
        result = change.apply(lc, timeout=wait_s)
        return UpdateResult(
            "component",
            name,
            result.status,
            list(change.changes),
            list(result.created),
            plan=change.plan,
        )
    if component is not None:  # its copies
        from ..lifecycle.components import find_component, set_copies
        from ..lifecycle.resources import as_error

        assert copies is not None
        full = find_component(lc.sm, name, component)
        try:
            now = lc.sm.describe_inference_component(InferenceComponentName=full)
        except Exception as exc:
            raise as_error(exc) from None
        was = now.get("RuntimeConfig", {}).get("DesiredCopyCount")
        if was == copies:  # the count it is already asked to keep: nothing to send
            (say or quiet)(f"no changes: {component} already has {copies} copies; nothing sent")
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
        ask(f"Set {name} component {component} to {copies} copies?")
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
    from ..lifecycle.resolve import plan
    from ..lifecycle.spec_tags import deployed_spec
    from ..planning.components.change import refuse_top_level_change
    from ..planning.meaning import changed_values, same_meaning
    from ..planning.spec.options import build_spec

    if not dry_run:  # an update cut short after UpdateEndpoint: finish it first
        from ..lifecycle.reconcile import finish_update, wait_settled

        # pasted while Updating: wait, then finish from the description the wait read
        described = wait_settled(lc, name, timeout=wait_s, on_poll=on_poll)
        if described is not None:
            for line in finish_update(lc, name, described=described):
                lc.say(line)
    current = deployed_spec(lc.sm, name)
    refuse_sandbox_only(current.model)
    refuse_top_level_change(current, name, k=k, mode=mode)
    before = plan(current)
    options = dataclasses.replace(
        extra, k=k, mode=mode, instance_type=instance_type, instance_count=instance_count,
    )  # fmt: skip
    base = current.model_dump(mode="json", exclude_unset=True)
    new = plan(build_spec(None, None, options, base=base))
    if new.names["endpoint"] != name:
        # The name only when the spec would not give this one (the default name says the
        # mode): set on a spec that names it by default, it changes the spec's hash, and
        # with it the config and model names: an update with nothing to change then made
        # a new model and config.
        options = dataclasses.replace(options, name=name)
        new = plan(build_spec(None, None, options, base=base))
    new.raise_for_failures()
    if same_meaning(before, new):
        # An explicit value equal to what the deployed spec resolves to (`-k 3` where K
        # was left to the default 3): the same requests under another hash. The deployed
        # spec stands, so nothing is sent and its tags are not rewritten.
        new = before
    changes = changed_values(before, new)
    live = _unchanged(lc.sm, name, new)
    if live is not None:
        (say or quiet)(f"no changes: {name} already runs this spec; nothing sent")
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
        )
    ask(f"Update {name} ({', '.join(changes) or 'no change'})?")
    result = lc.update(new, timeout=wait_s, on_poll=on_poll)
    return UpdateResult(
        "endpoint",
        name,
        result.status,
        changes,
        list(result.created),
        endpoint_config=new.names["endpoint_config"],
        speculative_config=new.speculative_config,
        plan=new,
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


# -- apply / diff -----------------------------------------------------------------------


@dataclass
class ApplyResult:
    """What `apply` did: the comparison (`diff`'s result), whether it was applied, and
    the endpoint's status after."""

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


def planned_on_aws(
    spec_or_model: Any,
    overrides: dict[str, Any],
    aws: Any,
    on_connect: OnConnect | None,
    *,
    refuse_sandbox: bool = True,
    say: Say | None = None,
    strict: bool = False,
) -> tuple[Any, Plan]:
    """The one way a spec becomes a plan AWS is about to receive (deploy, apply, diff):
    a sandbox-only model refused before planning (a JumpStart lookup is a request too),
    the plan's checks passed (CheckFailed, nothing sent; with `strict`, warnings too),
    then the AWS context, and a local head's push bucket, which needs the account."""
    from ..lifecycle.resolve import plan, to_spec, with_push_bucket
    from ..planning.plan_result import Plan as PlanType
    from ..planning.steps.drafter_checks import strict_checks

    if isinstance(spec_or_model, PlanType):
        if refuse_sandbox:
            refuse_sandbox_only(spec_or_model.spec.model, say=say)
        p = plan(spec_or_model.spec, **overrides) if overrides else spec_or_model
    else:
        spec = to_spec(spec_or_model, overrides)
        if refuse_sandbox:
            refuse_sandbox_only(spec.model, say=say)
        p = plan(spec)
    if strict:  # what the plan could not read (a head in S3) preflight reads strictly too
        p.checks, p.strict = strict_checks(p.checks), True
    p.raise_for_failures()
    ctx = context(p.region, aws, on_connect)
    return ctx, with_push_bucket(p, ctx)


def _compare(
    spec_or_path: Any,
    region: str | None,
    aws: Any,
    on_connect: OnConnect | None,
    *,
    refuse_sandbox: bool = False,
    say: Say | None = None,
    strict: bool = False,
) -> tuple[Any, ApplyPlan]:
    from ..lifecycle.apply import compare

    ctx, p = planned_on_aws(
        spec_or_path,
        {"region": region} if region else {},
        aws,
        on_connect,
        refuse_sandbox=refuse_sandbox,
        say=say,
        strict=strict,
    )
    return ctx, compare(p, ctx)


def diff(
    spec_or_path: Any,
    *,
    region: str | None = None,
    aws: Any = None,
    on_connect: OnConnect | None = None,
) -> ApplyPlan:
    """How the live endpoint differs from the spec (a path, a dict or a DeploymentSpec):
    `.action` is "create", "update" or "noop", with `.spec_changes` and
    `.request_changes`; "noop" when the spec sends the requests the deployed one sends
    (defaults filled in), however it is written. Read from the endpoint's own tags;
    changes nothing."""
    return _compare(spec_or_path, region, aws, on_connect)[1]


def apply(
    spec_or_path: Any,
    *,
    dry_run: bool = False,
    timeout: str | float | None = None,
    confirm: Confirm | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
    on_poll: Callable[[Any], None] | None = None,
    on_diff: Callable[[ApplyPlan], None] | None = None,
    strict: bool = False,
) -> ApplyResult:
    """Make the endpoint match the spec: create it, update it in place, or do nothing.
    `on_diff` sees the comparison first (as `diff` returns it), `confirm` is asked
    before anything changes; with `dry_run` nothing changes. `strict=True` (`--strict`)
    refuses a plan with a warning as one with a failure."""
    from ..lifecycle.manager import Lifecycle

    wait_s = seconds(timeout, "timeout")
    ctx, ap = _compare(
        spec_or_path, region, aws, on_connect, refuse_sandbox=not dry_run, say=say, strict=strict
    )
    if on_diff is not None:
        on_diff(ap)
    if ap.action == "noop":
        (say or quiet)(f"no changes: {ap.endpoint} already matches the spec")
    if dry_run or ap.action == "noop":
        return ApplyResult(ap, applied=False)
    if ap.live_name is not None:
        # Updating would create the plan's name beside it: change it where it was made.
        raise SpecError(
            f"{ap.live_name} is deployment {ap.plan.names['endpoint']} under another name "
            "(made by a CloudFormation stack?); apply updates endpoints by the plan's name",
            remedy="update the stack with a fresh `peagle export --format cloudformation`",
        )
    (confirm or quiet)(f"{ap.action.capitalize()} {ap.plan.names['endpoint']}?")
    lc = Lifecycle(ctx, say=say or quiet)
    if ap.action == "create":
        result = lc.apply(ap.plan, timeout=wait_s, on_poll=on_poll)
    else:
        result = lc.update(ap.plan, timeout=wait_s, on_poll=on_poll)
    return ApplyResult(ap, applied=True, status=result.status)


# -- adopt --------------------------------------------------------------------------------


def _write_spec(output: Path, result: AdoptResult, say: Say) -> None:
    try:
        Path(output).write_text(result.spec_yaml() + "\n")
    except OSError as e:
        raise SpecError(f"cannot write {output}: {e.strerror}", remedy="pick another -o") from None
    say(f"wrote the spec to {output}")


def adopt(
    name: str,
    *,
    model: str | None = None,
    dry_run: bool = False,
    accept_differences: bool = False,
    output: str | Path | None = None,
    confirm: Confirm | None = None,
    on_result: Callable[[AdoptResult], None] | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
) -> AdoptResult:
    """Take an endpoint made elsewhere (console, sagemaker SDK, boto3) under peagle's
    management: reconstruct its spec, run plan's checks, tag it as peagle's. The result
    has `.spec`, `.checks`, `.differences`, `.tagged` (empty on a dry run).

    `on_result` sees the result before `confirm` is asked; `output` also writes the spec
    as YAML (after the re-check that follows the answer, before the first tag). SpecError
    (nothing tagged) for what peagle cannot represent (unless `accept_differences`), an
    endpoint not settled InService, one sharing its config or model with another
    endpoint, or one it already manages; NotFound if there is none."""
    from ..lifecycle.adopt import adopt as adopt_endpoint

    check_endpoint_name(name)
    check_output_path(output, "--output", create_parents=False)  # before any request
    if model is not None:
        from ..catalog.models import find_model

        if find_model(model) is not None:
            refuse_sandbox_only(model)
    tell = say or quiet
    ctx = context(region, aws, on_connect)

    def ask(result: AdoptResult) -> None:
        if on_result is not None:
            on_result(result)
        names = ", ".join(n for _, n in result.resources)
        (confirm or quiet)(f"Tag {names} as managed by peagle?")

    def write(result: AdoptResult) -> None:
        if output is not None:
            _write_spec(Path(output), result, tell)

    result = adopt_endpoint(
        ctx,
        name,
        model=model,
        dry_run=dry_run,
        accept_differences=accept_differences,
        confirm=ask,
        before_tagging=write,
        say=tell,
    )
    if dry_run and output is not None:
        _write_spec(Path(output), result, tell)
    return result
