"""`peagle status`, `ls`, `logs`, `delete`, `gc`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .lifecycle_cmds import YesOpt, asker
from .options import (
    DryRunOpt,
    component_option,
    dry_run_option,
    force_option,
    idle_option,
    json_option,
)
from .output import console, current, note, table
from .spec_options import JsonOpt, RegionOpt

NameArg = Annotated[str, typer.Argument(help="Endpoint name.")]
DeleteForceOpt = force_option(
    "Also delete an endpoint peagle did not create, or inference components someone else "
    "added to it, with their scaling targets, policies and alarms (their models are kept)."
)
GcForceOpt = force_option(
    "With --operation: remove them even if that operation may still be running (its "
    "process is alive, or on another host, within its deadline). With --training: delete "
    "the job's head even if a model serves it."
)
LogsComponentOpt = component_option(
    "Read this inference component's logs (its own log group, "
    "/aws/sagemaker/InferenceComponents/<name>); the short name is enough."
)
LogsJsonOpt = json_option(
    "Print one JSON document (a list of events, each with its label: AWS or a plugin "
    "target's); with --follow, one JSON object per line (JSON Lines), so the stream can "
    "be piped."
)


def status_command(name: NameArg, region: RegionOpt = None, json_out: JsonOpt = False) -> None:
    """Status, instances, mode and K (read from the deployed model), image, the weights'
    and drafter's S3 URIs, age, $/h."""
    from .context import client

    st = client(region).status(name)
    current().result(st, render=lambda st: render_status(name, st))


def render_status(name: str, st: Any) -> None:
    """The endpoint as a field/value table (its first row, `source`, says where it was
    read: AWS or a plugin's target and its engine), then its inference components (if any), then
    any operation on it that did not finish, with the commands that undo or finish it."""
    from .faces import cli_text

    if st.problem:
        rows = [["source", current().label], ["status", st.status]]
        console().print(table(name, ["field", "value"], rows))
        fix = cli_text(st.fix) or ""
        note(f"{name} is broken: {st.problem}; `{fix.split(' (', 1)[0]}` removes it")
    else:
        _render_healthy(name, st)
    for u in st.unfinished or []:
        who = f"operation {u.operation}" if u.operation else "an operation"
        if u.state == "running":
            note(f"{who} may still be running ({u.owner}): {', '.join(u.resources)}")
            continue
        # The SDK names the calls; the CLI prints their commands (cli/faces.py).
        steps = [f"undo: `{cli_text(u.undo)}`"] if u.undo else []
        if u.finish:
            steps.append(f"finish: `{(cli_text(u.finish) or '').split(' (', 1)[0]}`")
        note(f"{who} did not finish: {', '.join(u.resources)}; {'; '.join(steps)}")


def _render_healthy(name: str, st: Any) -> None:
    price = st.price or "unknown"  # names its region and source, or why unknown
    rows = [
        ["source", current().label],
        ["status", st.status],
        [
            "instances",
            f"{st.instance_count} (desired {st.desired_instance_count}) x {st.instance_type}",
        ],
    ]
    if st.managed_instance_scaling:
        m = st.managed_instance_scaling
        scale_in = f", scale-in {m['scale_in']}" if m.get("scale_in") else ""
        rows.append(["managed scaling", f"min {m['min']} / max {m['max']} instances{scale_in}"])
    if st.components is None:  # one model on the variant; components carry their own
        k = f", K={st.k}" if st.k is not None else ""
        rows += [["mode", (st.mode or "") + k], ["image", st.image]]
        if st.model_data:
            rows.append(["weights", st.model_data])
        for channel, uri in (st.additional_data or {}).items():
            rows.append(["drafter" if channel == "eagle" else f"data ({channel})", uri])
    from .health_cmd import speculation_row

    if (row := speculation_row(st)) is not None:
        rows.append(row)
    rows += [["age", f"{(st.age_seconds or 0) // 60} min"], ["cost", price]]
    rows += spend_rows(st)
    if st.autoscaling:
        a = st.autoscaling
        rows.append(["autoscaling", f"min {a['min']} / max {a['max']}"])
    if st.failure_reason:
        rows.append(["failure reason", st.failure_reason])
    if st.rollout:
        rows.append(["rollout", _rollout_row(st.rollout)])
    rows += _expiry_rows(st)
    console().print(table(name, ["field", "value"], rows))
    if st.expiry == "overdue":  # the scheduled deletion failed or is late: say so, and the fix
        note(f"{name} expired at {st.expires_at}: {st.expiry_problem}; `peagle delete {name}`")
    if st.components is not None:
        console().print(_components_table(name, st.components))


def _expiry_rows(st: Any) -> list[list[str]]:
    """`expires`: the time and what is left (AWS's clock), or nothing without a TTL."""
    if st.expiry == "none":
        return []
    role = f", as {st.expiry_role}" if st.expiry_role else ""
    return [["expires", f"{st.expires_at} ({_countdown(st.expires_in_s, st.expiry)}{role})"]]


def _countdown(seconds: int | None, expiry: str) -> str:
    """`3h59m`, `14m`, or `overdue by 5m`: the `ls` column (AWS's clock)."""
    if seconds is None:
        return "-"
    s = abs(seconds)
    said = f"{s // 3600}h{(s % 3600) // 60:02d}m" if s >= 3600 else f"{s // 60}m"
    return f"overdue by {said}" if expiry == "overdue" else said


def _components_table(endpoint: str, comps: list[Any]) -> object:
    """One row per inference component: what it runs, its copies (current/desired) and
    its copy-count autoscaling range; narrow, so a row fits an 80-column terminal."""
    from ..ops.endpoints import component_short_name

    rows = []
    for c in comps:
        short = component_short_name(endpoint, c.name)
        mode = (c.mode or "") + (f", K={c.k}" if c.k is not None else "")
        copies = f"{c.current_copies}/{c.desired_copies}"
        if c.scaled_to_zero:
            copies += " (scaled to zero)"
        scaling = c.autoscaling
        rows.append(
            [
                short,
                (c.status or "") + (f": {c.failure_reason}" if c.failure_reason else ""),
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


IdleOpt = idle_option(
    "Only endpoints with no invocations over this window (2h, 1d): InService for all of it "
    "and no AWS/SageMaker Invocations on any variant or inference component, on AWS's clock."
)
GcIdleOpt = idle_option(
    "Instead: delete the endpoints with no invocations over this window (24h, 1d; as `ls "
    "--idle` lists them) that `delete` would delete without --force, each as `delete` "
    "does. Never one without the peagle:managed tag."
)


def ls_command(
    all_: Annotated[
        bool, typer.Option("--all", help="Include endpoints not made by peagle.")
    ] = False,
    idle: IdleOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List endpoints managed by peagle (by tag), with an estimate of what each has cost
    so far and would cost over 30 days at its current size."""
    from .context import client

    rows = client(region).ls(include_unmanaged=all_, idle=idle)
    current().result(rows, render=lambda rows: _render_ls(rows, all_, idle))


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def spend_rows(st: Any) -> list[list[str]]:
    """`status`'s spend rows: the estimate so far and over 30 days, and its basis."""
    if st.spend_note is None:
        return []
    return [
        ["spend so far (estimate)", _usd(st.spend_usd)],
        [
            "next 30 days, or until it expires (estimate)"
            if st.expires_at
            else "30 days at this size (estimate)",
            _usd(st.projected_30d_usd),
        ],
        ["spend basis", st.spend_note],
    ]


def _render_ls(rows: list[Any], all_: bool, idle: str | None = None) -> None:
    """A table titled with where the endpoints were listed ([AWS], or a plugin target's
    label), then how the spend was estimated."""
    label = f"[{current().label}]"
    if not rows:
        more = "" if all_ else " (--all shows every endpoint)"
        if idle:
            typer.echo(f"{label} no endpoints idle for {idle}{more}")
        else:
            typer.echo(f"{label} no peagle endpoints{more}")
        return

    from rich.markup import escape

    from ..ops.endpoints import component_short_name

    def short(r: Any) -> str:  # components by the short names they were deployed with
        names = [component_short_name(r.endpoint, c) for c in r.components]
        return ", ".join(names) or "-"

    title = escape(label) + (f" idle for {idle}" if idle else "")
    console().print(
        table(
            title,
            [
                "endpoint",
                "status",
                "created",
                "peagle",
                "components",
                "spend*",
                "30 d*",
                "expires in",
            ],
            [
                [
                    r.endpoint,
                    r.status,
                    r.created[:19],
                    "yes" if r.managed else "no",
                    short(r),
                    _usd(r.spend_usd),
                    _usd(r.projected_30d_usd),
                    _countdown(r.expires_in_s, r.expiry),
                ]
                for r in rows
            ],
        )
    )
    note(
        "* estimates: on-demand catalog price x instances x hours since creation on AWS's "
        "clock (30 d: at the current size, until its expiry if sooner); `peagle status NAME` "
        "says what each cannot see"
    )
    for r in rows:
        if r.spend_usd is None and r.spend_note:
            note(f"{r.endpoint}: spend {r.spend_note}")


def logs_command(
    name: NameArg,
    since: Annotated[str, typer.Option("--since", help="How far back (10m, 2h).")] = "10m",
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="Keep streaming. On logs, -f still means --follow, with a warning, until "
            "the next release; everywhere else -f is --file.",
        ),
    ] = False,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TEXT",
            help="Follow until a line contains TEXT, then stop (implies --follow): "
            '--until "SpecDecoding metrics" waits for vLLM\'s next metrics line (every 10 s '
            "while the endpoint generates).",
        ),
    ] = None,
    region: RegionOpt = None,
    component: LogsComponentOpt = None,
    json_out: LogsJsonOpt = False,
) -> None:
    """Stream the endpoint's (or an inference component's) CloudWatch logs; SpecDecoding
    metrics lines are highlighted. Each line starts with where it came from: [AWS], or
    the label of a plugin's local target (such as its SIMULATED engine's)."""
    from .context import client

    stream = client(region).logs(name, since=since, follow=follow, until=until, component=component)
    ic = stream.component
    empty = (
        f"[{stream.label}] no log lines for {name}{f' component {ic}' if ic else ''} "
        f"in the last {since}"
    )
    # --json: each event carries its "label"; with --follow, JSON Lines, one per event.
    if stream.follow:  # --follow, or --until (which follows)
        current().stream(stream, render=lambda events: _render_events(events, empty))
    else:
        current().result(stream, render=lambda events: _render_events(events, empty))


def _render_events(events: Any, empty: str) -> None:
    """Each event as `[LABEL] HH:MM:SS message` (the message as stored), SpecDecoding
    lines highlighted; a note (labelled too) if none."""
    from datetime import UTC, datetime

    from rich.markup import escape  # vLLM lines hold [file.py:123] tags, not markup

    out = console()
    count = 0
    for e in events:
        count += 1
        ts = datetime.fromtimestamp(e.timestamp / 1000, UTC).strftime("%H:%M:%S")
        style = "[bold magenta]{}[/]" if e.spec_decoding else "{}"
        out.print(
            f"{escape(f'[{e.label}]')} [dim]{ts}[/] " + style.format(escape(e.message)),
            markup=True,
            highlight=False,
            soft_wrap=True,
        )
    if count == 0:
        note(empty)


def delete_command(
    name: NameArg,
    keep_model: Annotated[bool, typer.Option("--keep-model", help="Keep the model(s).")] = False,
    force: DeleteForceOpt = False,
    keep_logs: Annotated[
        bool,
        typer.Option(
            "--keep-logs",
            help="Keep the log group peagle created for --monitor (the alarm, dashboard, "
            "filters and transformer go).",
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete the endpoint, then the config and models only it uses. Idempotent.

    Refuses an endpoint without the peagle:managed tag, or one hosting inference
    components peagle did not create, unless --force; never deletes a config or model
    another endpoint (or inference component) uses, nor a foreign component's model."""
    from .context import client

    result = client(region).delete(
        name,
        keep_model=keep_model,
        force=force,
        keep_logs=keep_logs,
        dry_run=dry_run,
        confirm=None if dry_run else asker(yes),
    )
    current().result(result, render=lambda r: _render_delete(r, name, dry_run))


def _render_delete(result: Any, name: str, dry_run: bool) -> None:
    if result.note:
        typer.echo(f"{name}: {result.note}")
    elif dry_run:
        typer.echo(f"would delete: {', '.join(result.would_delete)}")
        for kept, users in (result.kept_shared or {}).items():
            typer.echo(f"would keep {kept}: endpoint {', '.join(users)} uses it")
    # Otherwise the lifecycle already said "deleted N resources: ..." (once, on stderr).


def gc_command(
    dry_run: dry_run_option("Only list what would go.") = False,
    min_age: Annotated[
        str,
        typer.Option(
            "--min-age",
            help="Skip resources without an operation tag (made by an older peagle) "
            "younger than this: a deploy may be running elsewhere.",
        ),
    ] = "10m",
    operation: Annotated[
        str | None,
        typer.Option(
            "--operation",
            help="Only the resources of this operation (the id an interrupted command or "
            "`peagle status` printed).",
        ),
    ] = None,
    force: GcForceOpt = False,
    idle: GcIdleOpt = None,
    training: Annotated[
        str | None,
        typer.Option(
            "--training",
            metavar="JOB",
            help="Instead, delete this ended `drafter train` job, even Completed: its files "
            "under s3://BUCKET/peagle/training/JOB/ (its head among them), then the job.",
        ),
    ] = None,
    yes: YesOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete what peagle made that no finished deployment uses: endpoints whose deploy
    never completed or whose config or model is missing, inference components whose
    endpoint is gone, then endpoint configs and models nothing uses, and training jobs
    that failed or were stopped with their S3 files (a completed job's head is kept:
    name it with --training to delete it). What an operation that may still be running
    made is left alone; adopted resources are never touched. With --idle, the idle
    peagle endpoints instead."""
    from .context import client

    result = client(region).gc(
        dry_run=dry_run,
        min_age=min_age,
        operation=operation,
        force=force,
        confirm=asker(yes),
        idle=idle,
        training=training,
    )
    current().result(result, render=lambda r: _render_gc(r, dry_run, min_age, idle))


def _render_gc(result: Any, dry_run: bool, min_age: str, idle: str | None = None) -> None:
    names, young = result.orphans, result.skipped_young
    for ep, why in result.idle_kept.items():
        note(f"left {ep}, idle: {why}")
    verb = "would delete" if dry_run else "deleted"
    for n in names:
        why = result.endpoints.get(n)
        job = result.training_jobs.get(n)
        if job is not None:  # its files go first, then the job
            typer.echo(f"{verb} training job {n} ({job}) and its files in S3")
            continue
        typer.echo(f"{verb} {n}" + (f" (endpoint: {why})" if why else ""))
    for ep, op in result.finished.items():
        verb_f = "would finish" if dry_run else "finished"
        typer.echo(f"{verb_f} the update of {ep} ({op}: it took effect, its tags lagged)")
    from .advice import Suggestion, render

    for ep, state in result.settling.items():
        # Not "nothing to collect": what the update leaves is known once it settles.
        op = f" (operation {state['operation']})" if state.get("operation") else ""
        finish = render(Suggestion.of("update", ep, yes=True))
        typer.echo(
            f"{ep} is {state['status']}: an update{op} is still in flight; "
            f"`{finish}` waits for it and finishes it"
        )
    if not names and not result.finished and not result.settling:
        typer.echo(f"no peagle endpoint idle for {idle}" if idle else "nothing to collect")

    for op, held in result.running.items():
        remove = render(Suggestion.of("gc", operation=op, force=True, yes=True))
        note(
            f"left {', '.join(held)}: operation {op}, which made them, may still be running; "
            f"if it is not, `{remove}` removes them"
        )
    for job, why in result.training_kept.items():
        remove = render(Suggestion.of("gc", training=job, yes=True))
        note(f"kept training job {job}: {why}; `{remove}` deletes it with its head")
    if young:
        note(
            f"skipped {len(young)} resource(s) younger than --min-age {min_age} and made "
            f"without an operation tag, so a deploy may still be using them: "
            f"{', '.join(young)}; `{render(Suggestion.of('gc'))}` removes them once they are older"
        )


def _rollout_row(r: dict[str, Any]) -> str:
    """`canary baking, 50% on NEW, 4:10 left (alarms: X OK)`."""
    share = f", {r['new_share']:.0%} on {r['new_config']}" if r.get("new_share") is not None else ""
    left = r.get("bake_left_s")
    bake = f", {left // 60}:{left % 60:02d} left" if left is not None else ""
    alarms = ", ".join(f"{a['name']} {a['state']}" for a in r.get("alarms") or [])
    return f"{r.get('strategy') or 'rollout'} {r['phase']}{share}{bake}" + (
        f" (alarms: {alarms})" if alarms else ""
    )
