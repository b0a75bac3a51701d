"""`peagle adopt`: take an endpoint made elsewhere (the JumpStart console, the `sagemaker`
SDK, raw boto3) under peagle's management.

Reads the endpoint, its config, its model and its scaling target; reconstructs the spec
purely (`planning.adopt_spec`); runs the plan's checks and, on an S3 head, the drafter
checks deploy preflight runs; then, unless it is a dry run, tags the endpoint, the config
and the model exactly as peagle tags what it creates (`peagle:managed`, the spec in
`peagle:spec:*`, its hash). Only `peagle:*` tags are written; nothing else changes.
After that `update`, `apply`, `diff`, `bench`, `delete` and `gc` treat it as their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..checks import Check, passed, warned
from ..errors import ETC, Call, NotFound, SpecError, text
from ..planning.adopt.compare import Difference
from ..planning.adopt.refusals import refusal
from ..planning.adopt.spec import Adoption, Deployed, reconstruct
from ..planning.plan_result import Plan
from ..planning.spec.model import DeploymentSpec
from ..planning.spec.rollout_spec import RolloutSpec
from ..planning.spec.tags import PREFIX as SPEC_PREFIX
from .inventory import MANAGED
from .resources import ADOPTED, ORIGIN, not_found, tagged_requests
from .retag import retag
from .spec_tags import tag_dict

__all__ = ["AdoptResult", "adopt", "read_deployed"]

MAX_TAGS = 50  # per SageMaker resource


@dataclass(frozen=True)
class AdoptResult:
    """What `adopt` found and did; `to_dict()` is the `peagle adopt --json` document.

    Attributes:
        adoption: The reconstruction: the spec, its plan, what it cannot carry.
        deployed: The endpoint, its config and models as described.
        checks: The plan's checks, the head's, and adopt's own notes.
        tagged: The ARNs tagged peagle:managed (empty on a dry run).
        dry_run: True when nothing was tagged by request (`dry_run`).
    """

    adoption: Adoption
    deployed: Deployed
    checks: list[Check]
    tagged: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def action(self) -> str:
        """`dry-run` or `adopted`."""
        return "dry-run" if self.dry_run else "adopted"

    @property
    def spec(self) -> DeploymentSpec:
        """The reconstructed spec (what `update`, `apply` and `diff` start from)."""
        return self.adoption.spec

    @property
    def plan(self) -> Plan:
        return self.adoption.plan

    @property
    def differences(self) -> list[Difference]:
        """Fields the spec cannot carry: the next update or apply would change them."""
        return self.adoption.differences

    @property
    def resources(self) -> list[tuple[str, str]]:
        """(kind, name) of what adopting takes over: the endpoint, its config, models."""
        out = [("endpoint", self.deployed.name)]
        out.append(("endpoint config", self.deployed.config["EndpointConfigName"]))
        out += [("model", m) for m in self.deployed.models]
        return out

    def spec_yaml(self) -> str:
        """The reconstructed spec as YAML, defaults left out (what `adopt -o` writes)."""
        import yaml

        data = self.spec.model_dump(mode="json", exclude_defaults=True)
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip()

    def to_dict(self) -> dict[str, Any]:
        doc = self.adoption.to_dict()
        doc["checks"] = [c.to_dict() for c in self.checks]
        doc.pop("notes", None)
        doc["resources"] = [{"kind": k, "name": n} for k, n in self.resources]
        doc["tagged"] = self.tagged
        doc["action"] = self.action
        return doc


def _tags(sm: Any, arn: str) -> dict[str, str]:
    return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))


def read_deployed(aws: Any, name: str) -> Deployed:
    """Describe the endpoint, its config and models, their tags and its scaling target."""
    from botocore.exceptions import ClientError

    sm = aws.client("sagemaker")
    try:
        ep = sm.describe_endpoint(EndpointName=name)
    except ClientError as e:
        if not_found(e):
            raise NotFound(
                f"endpoint {name} does not exist",
                remedy=text("see `{ls}`", ls=Call("ls", include_unmanaged=True)),
            ) from None
        raise
    config = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    models: dict[str, dict[str, Any]] = {}
    for v in config.get("ProductionVariants") or []:
        if v.get("ModelName") and v["ModelName"] not in models:
            models[v["ModelName"]] = sm.describe_model(ModelName=v["ModelName"])
    d = Deployed(
        name=name,
        region=ep["EndpointArn"].split(":")[3],
        endpoint=ep,
        config=config,
        models=models,
        tags=_tags(sm, ep["EndpointArn"]),
    )
    first = next(iter(models.values()), None)
    if first:
        d.model_tags = _tags(sm, first["ModelArn"])
    variants = config.get("ProductionVariants") or []
    if len(variants) == 1:
        _read_scaling(aws, d, variants[0]["VariantName"])
    return d


def _read_scaling(aws: Any, d: Deployed, variant: str) -> None:
    aas = aws.client("application-autoscaling")
    rid = f"endpoint/{d.name}/variant/{variant}"
    targets = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[rid])
    found = targets.get("ScalableTargets") or []
    if found:
        d.scaling_target = found[0]
        pols = aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=rid)
        d.scaling_policies = pols.get("ScalingPolicies") or []


def _jumpstart_spec(d: Deployed, model: str | None) -> dict | None:
    """The JumpStart spec a non-catalog model plans from (cache or live), if any."""
    from ..catalog.models import find_model
    from ..planning.adopt.spec import JS_MODEL_ID
    from ..planning.spec.loading import spec_from_data
    from .resolve import resolve_inputs

    name = model or d.tags.get(JS_MODEL_ID) or d.model_tags.get(JS_MODEL_ID)
    entry = find_model(name) if name else None
    if not name or (entry and entry.jumpstart_snapshot):
        return None
    try:
        spec = spec_from_data({"model": name, "region": d.region})
        return resolve_inputs(spec).jumpstart_spec
    except SpecError:
        return None  # reconstruct names the model as unknown, with the fix


def _head_checks(aws: Any, adoption: Adoption) -> list[Check]:
    """Deploy preflight's drafter checks on each S3 head the endpoint mounts."""
    from .preflight import check_remote_head

    p = adoption.plan
    out: list[Check] = []
    for src in p.create_model["PrimaryContainer"].get("AdditionalModelDataSources", []):
        uri = src["S3DataSource"]["S3Uri"]
        try:
            out += check_remote_head(aws.client("s3"), uri, p)
        except Exception as e:  # a verdict, not a gate: the endpoint already runs
            out.append(warned("drafter.source", f"head {uri} not checked: {e}"))
    return out


def adopt(
    aws: Any,
    name: str,
    *,
    model: str | None = None,
    dry_run: bool = False,
    accept_differences: bool = False,
    confirm: Callable[[AdoptResult], None] | None = None,
    before_tagging: Callable[[AdoptResult], None] | None = None,
    say: Callable[[str], None] = lambda _m: None,
) -> AdoptResult:
    """Reconstruct `name`'s spec and, unless `dry_run`, tag it as peagle's. `confirm`
    sees the result first and raises to stop (nothing is tagged then); the endpoint is
    then read again, and `before_tagging` runs once that re-check passes, just before
    the first tag is written (it too may raise to stop). Refused (SpecError, nothing
    tagged): an endpoint peagle already carries the spec of, one not settled InService,
    one whose config or model another endpoint uses, and, unless `accept_differences`,
    one whose spec does not plan to the requests it runs. An endpoint tagged
    `peagle:managed` without the spec (an older peagle's, an older export's) is adopted:
    its spec tags are written.

    Safe to stop: interrupted (KeyboardInterrupt, which SIGTERM and SIGHUP raise too) or
    failing while it tags, it puts every resource's tags back as they were, then re-raises;
    interrupted again meanwhile, it says which resources may carry part of peagle's tags
    and that running it again finishes the job. Killed outright, running it again
    finishes the adoption: it ends exactly as one uninterrupted run would."""
    d = read_deployed(aws, name)
    if d.tags.get(MANAGED) == "true" and any(k.startswith(SPEC_PREFIX) for k in d.tags):
        if not _unfinished(aws.client("sagemaker"), d):
            raise SpecError(
                f"endpoint {name} is already managed by peagle (tagged {MANAGED}, with its "
                "spec); nothing to adopt",
                remedy=text(
                    "`{status}`, `{update}` or `{apply}`",
                    status=Call("status", name),
                    update=Call("update", name, ETC),
                    apply=Call("apply"),
                ),
            )
        say(f"an earlier adopt of {name} stopped partway; finishing it")
    adoption = reconstruct(d, model=model, jumpstart_spec=_jumpstart_spec(d, model))
    adoption = _with_monitoring(aws, adoption, name, say)
    adoption = _with_rollout(adoption, d)
    checks = _merged(adoption.notes, adoption.plan.checks) + _head_checks(aws, adoption)
    if dry_run:
        return AdoptResult(
            adoption, d, checks + _shared_notes(aws.client("sagemaker"), d), dry_run=True
        )
    result = AdoptResult(adoption, d, checks)
    _refuse_shared(aws.client("sagemaker"), d)
    if adoption.differences and not accept_differences:
        raise _differences_refusal(d.name, adoption.differences)
    if confirm is not None:
        confirm(result)
    _refuse_if_moved(aws.client("sagemaker"), d)  # the answer may have taken a while
    if before_tagging is not None:
        before_tagging(result)
    return replace(result, tagged=_tag(aws.client("sagemaker"), result, say))  # frozen


def _with_monitoring(
    aws: Any, adoption: Adoption, name: str, say: Callable[[str], None]
) -> Adoption:
    """The spec's `monitoring` read back from a live alarm of peagle's on the endpoint
    (its threshold, periods, datapoints and actions; the retention only of a log group
    peagle owns), else none. Adopt changes nothing of it: it never takes the log group."""
    from botocore.exceptions import BotoCoreError, ClientError

    from .monitoring import read_monitoring

    try:
        live = read_monitoring(aws, name)
    except (ClientError, BotoCoreError) as e:
        say(f"warning: monitoring of {name} not read: {e}")
        return adoption
    if live is None or live.alarm is None:
        return adoption
    spec = adoption.spec.model_copy(update={"monitoring": live.as_spec()})
    return replace(adoption, spec=spec)


def _with_rollout(adoption: Adoption, d: Deployed) -> Adoption:
    """The spec's `endpoint.rollout` from the endpoint's LastDeploymentConfig (none without
    one). Outside the spec hash and tags: it changes no difference and no tag."""
    from ..planning.adopt.rollout import rollout_from

    section, notes = rollout_from(d.endpoint.get("LastDeploymentConfig"), d.name)
    checks = [(passed if section else warned)("rollout", n) for n in notes]
    if section is None:
        return replace(adoption, notes=adoption.notes + checks)
    endpoint = adoption.spec.endpoint.model_copy(update={"rollout": RolloutSpec(**section)})
    spec = adoption.spec.model_copy(update={"endpoint": endpoint})
    return replace(adoption, spec=spec, notes=adoption.notes + checks)


def _differences_refusal(name: str, diffs: list[Difference]) -> SpecError:
    listed = "; ".join(str(x) for x in diffs)
    return SpecError(
        f"cannot adopt {name}: its spec does not plan to what it runs, so the next update "
        f"or apply would change {len(diffs)} field(s) peagle cannot represent: {listed}",
        remedy=text(
            "`{adopt}` shows them; {accept_differences} adopts anyway",
            adopt=Call("adopt", name, dry_run=True),
        ),
    )


def _shared(sm: Any, d: Deployed) -> list[tuple[str, str, list[str]]]:
    """(kind, name, the other endpoints using it) for its config and models."""
    from .inventory import resource_users

    users = resource_users(sm, skip=d.name)
    mine = [("endpoint config", d.config["EndpointConfigName"])]
    mine += [("model", m) for m in d.models]
    return [(kind, n, sorted(users[n])) for kind, n in mine if users.get(n)]


def _shared_notes(sm: Any, d: Deployed) -> list[Check]:
    """On a dry run, the refusal that adopting would meet, as a check."""
    return [
        warned(
            "shared",
            f"{kind} {n} is also used by endpoint {', '.join(others)}; adopt refuses it",
            "give each endpoint its own config and model first",
        )
        for kind, n, others in _shared(sm, d)
    ]


def _refuse_shared(sm: Any, d: Deployed) -> None:
    """peagle:managed means peagle may delete it; a resource another endpoint (or its
    inference component) uses cannot be peagle's alone, and peagle has no shared owner."""
    shared = _shared(sm, d)
    if not shared:
        return
    what = "; ".join(f"{k} {n} is also used by {', '.join(o)}" for k, n, o in shared)
    others = sorted({o for *_, users in shared for o in users})
    raise SpecError(
        f"cannot adopt {d.name}: {what}; tagging them peagle:managed would let peagle "
        "delete what another endpoint runs",
        remedy=f"update {', '.join(others)} to its own endpoint config and model "
        f"(CreateModel, CreateEndpointConfig, UpdateEndpoint), then adopt {d.name}",
    )


def _refuse_if_moved(sm: Any, d: Deployed) -> None:
    """Refuse if, since it was read, the endpoint left InService or changed config, or
    another endpoint started using its config or model."""
    now = sm.describe_endpoint(EndpointName=d.name)
    reason = refusal(Deployed(d.name, d.region, now, d.config, d.models))
    if reason is None and now["EndpointConfigName"] != d.config["EndpointConfigName"]:
        reason = (
            f"it now runs config {now['EndpointConfigName']}",
            text("`{adopt}`", adopt=Call("adopt", d.name)),
        )
    if reason:
        raise SpecError(f"cannot adopt {d.name}: {reason[0]}", remedy=reason[1])
    _refuse_shared(sm, d)


def _merged(notes: list[Check], plan_checks: list[Check]) -> list[Check]:
    """adopt's notes, then the plan's checks less a pass on a field a note warns about
    ("K=3 pass" under "K=3 but the head's recommended K is 7" reads as a contradiction)."""
    warned_fields = {c.name for c in notes if c.status != "pass"}
    return notes + [c for c in plan_checks if c.status != "pass" or c.name not in warned_fields]


def _adopt_keys(tags: dict[str, str]) -> dict[str, str]:
    """The tags that say how far an adopt got: the marker, the origin, the spec's chunks
    and its hash (`peagle:spec-sha256`)."""
    return {k: v for k, v in tags.items() if k in (MANAGED, ORIGIN) or k.startswith("peagle:spec")}


def _unfinished(sm: Any, d: Deployed) -> bool:
    """Did an adopt stop after writing the endpoint's tags but before it removed what it
    replaces (so the endpoint carries the spec, yet the adoption is not complete)? Adopt
    tags the models and the config before the endpoint, each to the same set: once done,
    all of them carry the same marker, origin and spec. The endpoint carrying others (the
    stale spec chunks its DeleteTags had yet to remove) is an adopt cut short; an endpoint
    peagle deployed, or updated since adopting it, has no `peagle:origin=adopted`."""
    if d.tags.get(ORIGIN) != ADOPTED:
        return False  # deployed by peagle, or adopted and since updated: managed
    ours = _adopt_keys(d.tags)
    arns = [d.config["EndpointConfigArn"], *(m["ModelArn"] for m in d.models.values())]
    return any(_adopt_keys(_tags(sm, arn)) != ours for arn in arns)


def _wanted(result: AdoptResult) -> dict[str, str]:
    """peagle's tags, as deploy writes them on the endpoint, plus the adopted origin."""
    *_, endpoint_req = tagged_requests(result.adoption.plan)
    wanted = {t["Key"]: t["Value"] for t in endpoint_req["Tags"] if t["Key"].startswith("peagle:")}
    # Made outside peagle: gc never sweeps it, even if an interrupted adopt left the
    # endpoint untagged and its owner then deleted the endpoint by hand.
    wanted[ORIGIN] = ADOPTED
    return wanted


def _owned_by(wanted: dict[str, str]) -> Callable[[str], bool]:
    """The keys adopt may remove: those it writes, and any spec chunk (a longer spec an
    interrupted run wrote leaves chunks past the new one's end). Not every `peagle:*`:
    tags of runs in progress (peagle:operation, ...) belong to those runs."""
    return lambda k: k in wanted or k.startswith(SPEC_PREFIX)


def _short(arn: str) -> str:
    return arn.split(":", 5)[-1]  # "model/NAME", "endpoint-config/NAME", "endpoint/NAME"


def _tag(sm: Any, result: AdoptResult, say: Callable[[str], None]) -> list[str]:
    """Write peagle's tags: models and config first, the endpoint (the marker) last; each
    added before what it replaces is removed (retag). Stopped or failing partway, put
    back what this run changed and re-raise."""
    wanted = _wanted(result)
    owned = _owned_by(wanted)
    d = result.deployed
    arns = [m["ModelArn"] for m in d.models.values()]
    arns += [d.config["EndpointConfigArn"], d.endpoint["EndpointArn"]]
    before = {arn: _tags(sm, arn) for arn in arns}
    for arn, tags in before.items():  # refuse before writing any
        total = len({*tags, *wanted})  # what it carries between the AddTags and DeleteTags
        if total > MAX_TAGS:
            raise SpecError(
                f"cannot adopt {d.name}: {arn.rsplit('/', 1)[-1]} would carry {total} tags; "
                f"SageMaker allows {MAX_TAGS}",
                remedy="remove some of its tags",
            )
    touched: list[str] = []
    try:
        for arn in arns:
            done = {k: v for k, v in before[arn].items() if owned(k)} == wanted
            touched.append(arn)  # before the request: it may land though we never hear back
            retag(sm, arn, wanted, owned, current=before[arn])
            say(f"{'already tagged' if done else 'tagged'} {_short(arn)}")
    except (Exception, KeyboardInterrupt):
        _restore(sm, d.name, touched[::-1], before, owned, say)
        raise
    return arns


def _restore(
    sm: Any,
    name: str,
    arns: list[str],
    before: dict[str, dict[str, str]],
    owned: Callable[[str], bool],
    say: Callable[[str], None],
) -> None:
    """Put each resource's keys `owned` back as `before` had them, the endpoint first (so
    it stops being the marker of an adoption first). Per resource, delete what differs,
    then add back the old values: a restore cut between the two leaves the endpoint
    without peagle's spec, which a new adopt starts over, and on moto (which appends a
    duplicate on an AddTags of an existing key) no duplicate is left. An error on one
    resource does not stop the others; a second interrupt stops it all and says what
    is left."""
    left: list[str] = []
    pending = list(arns)
    try:
        while pending:
            arn = pending[0]
            try:
                now = _tags(sm, arn)
                drop = [k for k, v in now.items() if owned(k) and before[arn].get(k) != v]
                if drop:
                    sm.delete_tags(ResourceArn=arn, TagKeys=drop)
                back = [
                    {"Key": k, "Value": v}
                    for k, v in before[arn].items()
                    if owned(k) and (k in drop or now.get(k) != v)
                ]
                if back:
                    sm.add_tags(ResourceArn=arn, Tags=back)
            except Exception as e:  # keep going: the others must still be put back
                left.append(arn)
                say(f"could not put back the tags of {_short(arn)}: {e}")
            pending.pop(0)
    except KeyboardInterrupt as stop:
        from ..errors import Interrupted

        raise Interrupted(
            "adopt stopped",
            [("tags", _short(a)) for a in left + pending],
            Call("adopt", name),
            effect=f"finishes adopting {name} (they may be partly peagle's)",
            region=getattr(getattr(sm, "meta", None), "region_name", None),
        ) from stop
    if left:
        _say_left(say, name, left)
    elif arns:
        say(f"put the tags of {', '.join(_short(a) for a in arns)} back as they were")


def _say_left(say: Callable[[str], None], name: str, arns: list[str]) -> None:
    say(
        text(
            "the tags of {tags} may be partly peagle's; `{adopt}` finishes adopting {name}",
            tags=", ".join(_short(a) for a in arns),
            adopt=Call("adopt", name, yes=True),
            name=name,
        )
    )
