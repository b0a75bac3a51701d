"""`peagle status`, `ls`, `logs`, `delete`, `gc`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .lifecycle_cmds import YesOpt, _lifecycle, confirm
from .output import console, note, print_json, table
from .spec_options import JsonOpt, RegionOpt

NameArg = Annotated[str, typer.Argument(help="Endpoint name.")]


def status_command(name: NameArg, region: RegionOpt = None, json_out: JsonOpt = False) -> None:
    """Status, instances, mode and K (read from the deployed model), image, age, $/h."""
    from ..lifecycle.inventory import endpoint_status

    lc = _lifecycle(region, json_out)
    st = endpoint_status(lc.sm, name, aas=lc.aws.client("application-autoscaling"))
    if json_out:
        print_json(st)
        return
    price = f"${st['usd_per_hour']:.2f}/h" if st["usd_per_hour"] is not None else "unknown"
    rows = [
        ["status", st["status"]],
        [
            "instances",
            f"{st['instance_count']} (desired {st['desired_instance_count']}) x "
            f"{st['instance_type']}",
        ],
    ]
    if st.get("managed_instance_scaling"):
        m = st["managed_instance_scaling"]
        scale_in = f", scale-in {m['scale_in']}" if m.get("scale_in") else ""
        rows.append(["managed scaling", f"min {m['min']} / max {m['max']} instances{scale_in}"])
    if "components" not in st:  # one model on the variant; components carry their own
        k = f", K={st['k']}" if st["k"] is not None else ""
        rows += [["mode", st["mode"] + k], ["image", st["image"]]]
    rows += [["age", f"{st['age_seconds'] // 60} min"], ["cost", price]]
    if st.get("autoscaling"):
        a = st["autoscaling"]
        rows.append(["autoscaling", f"min {a['min']} / max {a['max']}"])
    if st["failure_reason"]:
        rows.append(["failure reason", st["failure_reason"]])
    console().print(table(name, ["field", "value"], rows))
    if "components" in st:
        console().print(_components_table(name, st["components"]))


def _components_table(endpoint: str, comps: list[dict]) -> object:
    """One row per inference component: what it runs, its copies (current/desired) and
    its copy-count autoscaling range; narrow, so a row fits an 80-column terminal."""
    from ..planning.components import component_short_name

    rows = []
    for c in comps:
        short = component_short_name(endpoint, c["name"])
        mode = c["mode"] + (f", K={c['k']}" if c.get("k") is not None else "")
        copies = f"{c['current_copies']}/{c['desired_copies']}"
        if c["scaled_to_zero"]:
            copies += " (scaled to zero)"
        scaling = c.get("autoscaling")
        rows.append(
            [
                short,
                c["status"] + (f": {c['failure_reason']}" if c.get("failure_reason") else ""),
                mode,
                copies,
                f"{scaling['min']}..{scaling['max']}" if scaling else "-",
            ]
        )
    return table(
        "inference components",
        ["component", "status", "mode", "copies", "autoscaling"],
        rows,
    )


def ls_command(
    all_: Annotated[
        bool, typer.Option("--all", help="Include endpoints not made by peagle.")
    ] = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List endpoints managed by peagle (by tag)."""
    from ..lifecycle.inventory import list_endpoints

    lc = _lifecycle(region, json_out)
    rows = list_endpoints(lc.sm, include_unmanaged=all_)
    if json_out:
        print_json(rows)
        return
    if not rows:
        typer.echo("no peagle endpoints" + ("" if all_ else " (--all shows every endpoint)"))
        return

    from ..planning.components import component_short_name

    def short(r: dict) -> str:  # components by the short names they were deployed with
        names = [component_short_name(r["endpoint"], c) for c in r["components"]]
        return ", ".join(names) or "-"

    console().print(
        table(
            None,
            ["endpoint", "status", "created", "peagle", "components"],
            [
                [
                    r["endpoint"],
                    r["status"],
                    r["created"][:19],
                    "yes" if r["managed"] else "no",
                    short(r),
                ]
                for r in rows
            ],
        )
    )


def _group_exists(lc: object, group: str) -> bool:
    found = lc.aws.client("logs").describe_log_groups(logGroupNamePrefix=group)  # type: ignore[attr-defined]
    return any(g["logGroupName"] == group for g in found.get("logGroups", []))


def _log_component(lc: object, name: str, component: str | None) -> str | None:
    """The inference component whose logs `logs NAME --component C` reads: one the
    endpoint hosts (full or short name), or a deleted one whose log group remains
    (exit 2 if neither). Without --component on an endpoint with components: a note
    naming them (their container logs are in their own groups)."""
    from ..lifecycle.component_targets import choices, components_of, resolve_component
    from ..lifecycle.endpoint_logs import log_group

    names = components_of(lc.sm, name)  # type: ignore[attr-defined]
    if component is None:
        if names:
            note(
                f"{name} hosts inference components, whose container logs are in their own "
                f"log groups: add --component with one of {choices(name, names)}"
            )
        return None
    from ..planning.components import component_full_name

    full = component_full_name(name, component)
    if names and (component in names or full in names):  # hosted now: the usual check
        return resolve_component(lc.sm, name, component)  # type: ignore[attr-defined]
    for candidate in (full, component):
        if _group_exists(lc, log_group(name, candidate)):
            return candidate  # deleted, or not listed: its logs remain
    return resolve_component(lc.sm, name, component)  # type: ignore[attr-defined]


def _check_log_source(lc: object, name: str) -> None:
    """`logs NAME` for a name with neither an endpoint nor a log group is a mistake (exit 1);
    a deleted endpoint whose logs remain is not."""
    from botocore.exceptions import ClientError

    from ..errors import NotFound
    from ..lifecycle.endpoint_logs import log_group

    try:
        lc.sm.describe_endpoint(EndpointName=name)  # type: ignore[attr-defined]
        return
    except ClientError as e:
        if "Could not find" not in str(e):
            raise
    if not _group_exists(lc, log_group(name)):
        raise NotFound(f"endpoint {name} does not exist and has no logs", remedy="see `peagle ls`")


def _log_doc(e: dict) -> dict:
    from ..lifecycle.endpoint_logs import parse_spec_decoding

    return {
        "timestamp": e["timestamp"],
        "stream": e.get("logStreamName"),
        "message": e["message"],
        "spec_decoding": parse_spec_decoding(e["message"]),
    }


def logs_command(
    name: NameArg,
    since: Annotated[str, typer.Option("--since", help="How far back (10m, 2h).")] = "10m",
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep streaming.")] = False,
    region: RegionOpt = None,
    component: Annotated[
        str | None,
        typer.Option(
            "--component",
            help="Read this inference component's logs (its own log group, "
            "/aws/sagemaker/InferenceComponents/<name>); the short name is enough.",
        ),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document (a list of events); with --follow, one JSON "
            "object per line (JSON Lines), so the stream can be piped.",
        ),
    ] = False,
) -> None:
    """Stream the endpoint's (or an inference component's) CloudWatch logs; SpecDecoding
    metrics lines are highlighted."""
    from datetime import UTC, datetime

    from ..lifecycle.endpoint_logs import fetch_log_events, follow_log_events, parse_spec_decoding
    from ..lifecycle.waiter import parse_duration

    seconds = parse_duration(since)
    lc = _lifecycle(region, json_out)
    if component is None:
        _check_log_source(lc, name)
    ic = _log_component(lc, name, component)  # a component's logs outlive its endpoint
    if json_out and not follow:
        events_now = fetch_log_events(lc.aws, name, since=seconds, component=ic)
        print_json([_log_doc(e) for e in events_now])
        return
    events = (
        follow_log_events(lc.aws, name, since=seconds, component=ic)
        if follow
        else fetch_log_events(lc.aws, name, since=seconds, component=ic)
    )
    from rich.markup import escape  # vLLM lines hold [file.py:123] tags, not markup

    out = console()
    count = 0
    for e in events:
        count += 1
        if json_out:  # --follow --json: JSON Lines
            typer.echo(json.dumps(_log_doc(e)))
            continue
        ts = datetime.fromtimestamp(e["timestamp"] / 1000, UTC).strftime("%H:%M:%S")
        style = "[bold magenta]{}[/]" if parse_spec_decoding(e["message"]) else "{}"
        out.print(
            f"[dim]{ts}[/] " + style.format(escape(e["message"])),
            markup=True,
            highlight=False,
            soft_wrap=True,
        )
    if count == 0 and not json_out:
        note(f"no log lines for {name}{f' component {ic}' if ic else ''} in the last {since}")


def delete_command(
    name: NameArg,
    keep_model: Annotated[bool, typer.Option("--keep-model", help="Keep the model(s).")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Also delete an endpoint peagle did not create, or inference components "
            "someone else added to it, with their scaling targets, policies and alarms "
            "(their models are kept).",
        ),
    ] = False,
    yes: YesOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete the endpoint, then the config and models only it uses. Idempotent.

    Refuses an endpoint without the peagle:managed tag, or one hosting inference
    components peagle did not create, unless --force; never deletes a config or model
    another endpoint (or inference component) uses, nor a foreign component's model."""
    lc = _lifecycle(region, json_out)
    question = f"Delete endpoint {name} and its config/models?"
    if force and not yes:  # say what --force destroys that is not peagle's
        from ..lifecycle.components import split_components

        foreign = split_components(lc.sm, name)[1]
        if foreign:
            question = (
                f"Delete endpoint {name} and its config/models, and inference component(s) "
                f"peagle did not create: {', '.join(foreign)} (their scaling targets, "
                "policies and alarms go too; their models are kept)?"
            )
    confirm(question, yes)
    result = lc.delete(name, keep_model=keep_model, force=force)
    if json_out:
        print_json(result)
    elif result.get("note"):
        typer.echo(f"{name}: {result['note']}")
    # Otherwise the lifecycle already said "deleted N resources: ..." (once, on stderr).


def gc_command(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would go.")] = False,
    min_age: Annotated[
        str,
        typer.Option(
            "--min-age",
            help="Skip resources younger than this (a deploy may be running elsewhere).",
        ),
    ] = "10m",
    yes: YesOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete peagle-managed inference components whose endpoint is gone (with their
    autoscaling), then endpoint configs and models that no endpoint or component uses."""
    from ..lifecycle.components import deregister_component_scaling
    from ..lifecycle.inventory import find_orphans
    from ..lifecycle.waiter import parse_duration

    lc = _lifecycle(region, json_out)
    orphans = find_orphans(lc.sm, min_age_seconds=parse_duration(min_age))
    young = orphans.pop("young")
    names = orphans["inference_components"] + orphans["endpoint_configs"] + orphans["models"]
    deleted: list[str] = []
    if names and not dry_run:
        confirm(f"Delete {len(names)} orphaned resources?", yes)
        for ic in orphans["inference_components"]:  # first: they name the models
            deregister_component_scaling(lc, ic)
            lc.delete_and_confirm("inference_component", ic)
            deleted.append(ic)
        for cfg in orphans["endpoint_configs"]:
            lc.delete_and_confirm("endpoint_config", cfg)
            deleted.append(cfg)
        for m in orphans["models"]:
            lc.delete_and_confirm("model", m)
            deleted.append(m)
    if json_out:
        print_json({**orphans, "skipped_young": young, "deleted": deleted, "dry_run": dry_run})
        return
    verb = "would delete" if dry_run else "deleted"
    for n in names:
        typer.echo(f"{verb} {n}")
    if not names:
        typer.echo("nothing to collect")
    if young:
        note(
            f"skipped {len(young)} orphan(s) younger than --min-age {min_age} (a deploy may "
            f"still be running): {', '.join(young)}; `peagle gc --min-age 0 --yes` removes them"
        )
