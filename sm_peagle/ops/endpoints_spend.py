"""The spend and idle parts of `status`, `ls` and `gc` (sm_peagle.ops.endpoints): the spend
estimate on a status or a listing (`lifecycle/spend.py`), which endpoints took no traffic
over a window (`lifecycle/idle.py`), and `gc(idle=)`, which deletes the idle ones `delete`
would delete. Times are AWS's: the endpoints' CreationTime / LastModifiedTime and the `Date`
of AWS's answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import Param, SpecError, text
from .endpoints_results import EndpointSummary, GcResult
from .session import seconds

__all__ = ["check_idle", "gc_idle", "listing", "status_spend"]

MIN_IDLE_S = 60  # SageMaker publishes Invocations per minute: a shorter window says nothing


def check_idle(idle: str | float | None) -> float | None:
    """The idle window in seconds, checked before any request: SpecError (exit 2, field
    `idle`) for a malformed duration or one under a minute."""
    try:
        window = seconds(idle, "idle")
    except SpecError as e:  # name the parameter: `--idle soon`, not "duration 'soon'"
        raise SpecError(
            text("{idle}: {v} is not a duration", idle=Param("idle"), v=repr(idle)),
            remedy=e.remedy,
            field="idle",
            value=str(idle),
            rule=e.rule,
        ) from None
    if window is not None and window < MIN_IDLE_S:
        raise SpecError(
            text(
                "{idle}: {w} s is under a minute, SageMaker's metric period",
                idle=Param("idle"),
                w=f"{window:g}",
            ),  # fmt: skip
            remedy="give a window of a minute or more, e.g. 2h or 1d",
            field="idle",
            value=str(idle),
        )
    return window


def _spend_doc(est: Any) -> dict[str, Any]:
    return {
        "spend_usd": est.spend_usd,
        "projected_30d_usd": est.projected_30d_usd,
        "spend_note": est.note,
    }


def billing_ends_in(expiry: dict[str, Any]) -> float | None:
    """Seconds until a scheduled deletion ends the billing (`expires_in_s`); None (the full
    projection) when none is scheduled, or when it is overdue: its deletion failed and it
    bills on."""
    return expiry.get("expires_in_s") if expiry.get("expiry") == "scheduled" else None


def status_spend(ctx: Any, name: str, expires_in_s: float | None = None) -> dict[str, Any]:
    """`spend_usd`, `projected_30d_usd` (no further than its expiry, `expires_in_s` from
    now) and `spend_note` of one endpoint (empty when it is gone): DescribeEndpoint, its
    config, and its variants' scaling activities."""
    from ..lifecycle.resources import not_found
    from ..lifecycle.spend import History, endpoint_spend, resource_id, scaling_history

    sm = ctx.client("sagemaker")
    try:
        desc = sm.describe_endpoint(EndpointName=name)
    except Exception as e:
        if not_found(e):
            return {}
        raise
    aas = ctx.client("application-autoscaling")
    history = History()
    for v in desc.get("ProductionVariants") or []:
        one = scaling_history(aas, resource_id(name, v["VariantName"]))
        history.changes.update(one.changes)
        history.unreadable |= one.unreadable
        history.problem = history.problem or one.problem
    return _spend_doc(endpoint_spend(sm, desc, ctx.synced_aws_now(), history, expires_in_s))


def _describe_all(sm: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """DescribeEndpoint of each (one deleted meanwhile is left out)."""
    from ..lifecycle.resources import not_found

    out = {}
    for n in names:
        try:
            out[n] = sm.describe_endpoint(EndpointName=n)
        except Exception as e:
            if not not_found(e):
                raise
    return out


def listing(ctx: Any, rows: list[dict[str, Any]], window: float | None) -> list[EndpointSummary]:
    """`ls`'s rows with their spend, only the idle ones when `window` is given: one
    DescribeEndpoint and DescribeEndpointConfig each, one (paginated)
    DescribeScalingActivities for them all, and with `window` one GetMetricData."""
    from ..lifecycle.idle import idle_endpoints
    from ..lifecycle.spend import endpoint_spend, scaling_history

    if not rows:
        return []
    sm = ctx.client("sagemaker")
    described = _describe_all(sm, [r["endpoint"] for r in rows])
    history = scaling_history(ctx.client("application-autoscaling"))
    now = ctx.synced_aws_now()
    if window is not None:
        comps = {r["endpoint"]: r["components"] for r in rows}
        wanted = set(
            idle_endpoints(ctx.client("cloudwatch"), list(described.values()), comps, window, now)
        )
        rows = [r for r in rows if r["endpoint"] in wanted]
    out = []
    for r in rows:
        desc = described.get(r["endpoint"])
        left = billing_ends_in(r)
        spend = _spend_doc(endpoint_spend(sm, desc, now, history, left)) if desc else {}
        out.append(EndpointSummary(**r, **spend))
    return out


def _window_words(window: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if window % size == 0:
            return f"{int(window // size)}{unit}"
    return f"{window:g}s"


def gc_idle(
    lc: Any,
    window: float,
    *,
    dry_run: bool,
    confirm: Callable[[str], None] | None,
) -> GcResult:
    """Delete the endpoints idle over `window` that `delete` would delete without `force`
    (peagle's, hosting no component peagle did not create), each as `delete` deletes it
    (its components, the endpoint, its monitoring, then the configs and models nothing else
    uses). Idle endpoints `delete` would refuse are in `idle_kept`, with its reason."""
    from ..lifecycle.deletion import plan_deletion
    from ..lifecycle.idle import idle_endpoints
    from ..lifecycle.inventory import list_endpoints

    rows = list_endpoints(lc.sm, include_unmanaged=True)
    described = _describe_all(lc.sm, [r["endpoint"] for r in rows])
    now = lc.aws.synced_aws_now()
    comps = {r["endpoint"]: r["components"] for r in rows}
    idle = idle_endpoints(lc.aws.client("cloudwatch"), list(described.values()), comps, window, now)
    why = f"idle: no invocations in the last {_window_words(window)}"
    deletable: dict[str, str] = {}
    kept: dict[str, str] = {}
    for ep in idle:
        try:
            plan_deletion(lc, ep)  # read only: delete's refusals, without force
        except SpecError as e:
            kept[ep] = str(e.message).removesuffix("; nothing was deleted")
            continue
        deletable[ep] = why
    result = GcResult(
        inference_components=[],
        endpoint_configs=[],
        models=[],
        skipped_young=[],
        deleted=[],
        dry_run=dry_run,
        endpoints=deletable,
        idle_kept=kept,
    )
    if dry_run or not deletable:
        return result
    if confirm is not None:
        confirm(
            f"Delete {len(deletable)} endpoint(s) with no invocations in the last "
            f"{_window_words(window)} ({', '.join(deletable)}) and the configs and models "
            "only they use?"
        )
    for ep in deletable:
        result.deleted.extend(lc.delete(ep)["deleted"])
    return result
