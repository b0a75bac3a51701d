"""The `peagle` command. Thin: each command calls the SDK and renders the result.

Only typer (click) is imported at start-up. Every command imports what it needs inside
its body, so `peagle --help` and `peagle plan` never import boto3 or rich tables.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from .lazy_commands import defer_coercion, is_listing_stub, listing_stub, real_command
from .options import JsonOpt, QuietOpt, SandboxEngine, VerboseOpt

# name -> (module, attribute). A sub-app (typer.Typer) is added as a group.
COMMANDS: dict[str, tuple[str, str]] = {
    "models": ("catalog_cmds", "models"),
    "instances": ("catalog_cmds", "instances"),
    "schema": ("catalog_cmds", "schema"),
    "plan": ("plan_cmd", "plan_command"),
    "deploy": ("lifecycle_cmds", "deploy_command"),
    "status": ("inventory_cmds", "status_command"),
    "ls": ("inventory_cmds", "ls_command"),
    "logs": ("inventory_cmds", "logs_command"),
    "update": ("lifecycle_cmds", "update_command"),
    "delete": ("inventory_cmds", "delete_command"),
    "gc": ("inventory_cmds", "gc_command"),
    "invoke": ("invoke_cmds", "invoke_command"),
    "chat": ("invoke_cmds", "chat_command"),
    "apply": ("apply_cmds", "apply_command"),
    "adopt": ("adopt_cmd", "adopt_command"),
    "diff": ("apply_cmds", "diff_command"),
    "recommend": ("recommend_cmd", "recommend_command"),
    "bench": ("bench_cmds", "bench_command"),
    "sweep": ("bench_cmds", "sweep_command"),
    "report": ("report_cmd", "report_command"),
    "race": ("race_cmd", "race_command"),
    "tune-k": ("tune_cmds", "tune_k_command"),
    "export": ("iac_cmds", "export_command"),
    "iam-policy": ("iac_cmds", "iam_policy_command"),
    "drafter": ("drafter_cmds", "drafter_app"),
    "doctor": ("doctor_cmd", "doctor_command"),
}
# Command groups a plugin adds through the `sm_peagle.commands` entry point: the sandbox's
# `peagle sandbox …` (sm_peagle/plugins.py). Named here so `peagle sandbox` without the
# plugin says how to install it instead of "No such command".
PLUGIN_COMMANDS = ("sandbox",)
# What `peagle --help` says of a plugin's group, read without importing the plugin.
PLUGIN_HELP = {
    "sandbox": "A local SageMaker on 127.0.0.1 with a SIMULATED or real vLLM CPU engine "
    "(the peagle-sandbox distribution): start, status, stop, install-engine.",
}


def _print_version(value: bool) -> None:
    if value:
        from ..version import __version__

        typer.echo(f"peagle {__version__}")
        raise typer.Exit(0)


EPILOG = (
    "Global options also work after the command: --json, -q/--quiet, -v/--verbose. "
    "Environment: PEAGLE_DEBUG=1 prints the traceback of an unexpected error instead of "
    "one line; NO_COLOR=1 turns colour off; every PEAGLE_* variable is listed in the "
    "docs (Reference, Settings). Shell completion: peagle --install-completion."
)
ROOT_FLAGS = ("--json", "--quiet", "-q", "--verbose", "-v")


class PeagleGroup(TyperGroup):
    """The root group (and `drafter`, `sandbox`): gives every command the global
    -q/--quiet and -v/--verbose, and turns a deprecated spelling (`cli/options.py`,
    DEPRECATED) into the current one with a one-line warning before click parses."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        defer_coercion(self.params)
        for command in self.commands.values():
            _add_global_options(command)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Any, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name is not None and is_listing_stub(command):  # a root-level run: build it now
            command = self.commands[name] = real_command(build_app, name)
        if command is not None and not isinstance(command, TyperGroup):
            defer_coercion(command.get_params(ctx))  # its --help option is made here
            from .options import rewrite_deprecated
            from .output import current

            path = " ".join([*_command_path(ctx), name or ""]).strip()
            rest, warnings = rewrite_deprecated(path, rest, lambda o: _spellings(command, o))
            for warning in warnings:
                current().warn(warning)
        return name, command, rest

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # with --help and the completion options
        defer_coercion(params)
        return params

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:  # typer keeps only the exit code: keep the rest
            from .signals import keep_stopped

            keep_stopped(exc)
            raise


def _command_path(ctx: Any) -> list[str]:
    """The command names from the root to `ctx` (the root's own name left out)."""
    names = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return names[::-1]


def _spellings(command: Any, option: str) -> tuple[str, ...] | None:
    for param in command.params:
        spellings = (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
        if param.param_type_name == "option" and option in spellings:
            return tuple(spellings)
    return None


_GLOBAL_PARAMS: list[Any] = []


def _global_params() -> list[Any]:
    """-q/--quiet and -v/--verbose as click parameters, made once by typer itself."""
    if not _GLOBAL_PARAMS:
        probe = typer.Typer(add_completion=False)

        @probe.command()
        def _probe(quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
            """Only its parameters are used."""

        _GLOBAL_PARAMS.extend(typer.main.get_command(probe).params)
    return _GLOBAL_PARAMS


def _add_global_options(command: Any) -> None:
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _add_global_options(sub)
        return
    taken = {s for p in command.params for s in (*p.opts, *getattr(p, "secondary_opts", ()))}
    for param in _global_params():
        if not taken & set(param.opts):
            command.params.append(param)
    defer_coercion(command.params)


def build_app(
    only: str | None = None, *, plugins: bool = True, stubs: bool | None = None
) -> typer.Typer:
    """The typer app; with `only`, just that command.

    typer turns every parameter of every registered command into click objects when it
    runs, which costs ~40 ms for the whole tree. Registering only the command being run
    avoids that; the root callback keeps the group shape so `peagle plan …` parses the
    same either way. `stubs` (default: a root-level run as `main` makes it, all
    commands and plugin groups as stubs) registers each command as a listing stub, built
    for real when click resolves it (`cli/lazy_commands.py`).
    """
    if stubs is None:
        stubs = only is None and not plugins
    app = typer.Typer(
        name="peagle",
        help="Deploy, verify, benchmark and cleanly remove P-EAGLE endpoints on SageMaker.",
        epilog=EPILOG,
        cls=PeagleGroup,
        no_args_is_help=True,
        add_completion=True,
        rich_markup_mode=None,  # plain click help: no rich import on --help
        pretty_exceptions_enable=False,
    )

    @app.callback(epilog=EPILOG)
    def _root(
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        verbose: VerboseOpt = False,
        version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Show the version."
        ),
        sandbox: bool = typer.Option(
            False,
            "--sandbox",
            help="Run against a local SageMaker sandbox (started on demand; also "
            "PEAGLE_SANDBOX=1). See `peagle sandbox --help`.",
        ),
        sandbox_engine: Annotated[
            SandboxEngine | None,
            typer.Option(
                "--sandbox-engine",
                parser=str,  # checked by the sandbox, which names the choices
                help="The sandbox's engine: simulated (default) or vllm, the real vLLM CPU "
                "engine (also PEAGLE_SANDBOX_ENGINE). Implies --sandbox.",
            ),
        ] = None,
    ) -> None:
        """Deploy, verify, benchmark and cleanly remove P-EAGLE endpoints on SageMaker."""

    for name, (module, attr) in COMMANDS.items():
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(f".{module}", __package__), attr)
        if stubs and isinstance(target, typer.Typer):  # listed among the groups, as itself
            stub = listing_stub(target)
            app.add_typer(typer.Typer(), name=name, callback=stub, help=stub.__doc__)
        elif stubs:
            app.command(name)(listing_stub(target))
        elif isinstance(target, typer.Typer):
            app.add_typer(target, name=name, cls=PeagleGroup)
        else:
            app.command(name)(target)
    if only is None or only in PLUGIN_COMMANDS:
        from ..plugins import command_groups

        for name, ep in command_groups().items():
            if only is None and not plugins:
                # `peagle --help` lists the group without importing the plugin: the
                # product loads the emulator only when one of its commands runs.
                app.add_typer(typer.Typer(help=PLUGIN_HELP.get(name, "")), name=name)
                continue
            if only is None or name == only:
                app.add_typer(ep.load(), name=name, cls=PeagleGroup)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # the full app, for tests and tools that import it
        return build_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; `cli/boundary.py` turns whatever stops it into one line
    (and, with --json, one JSON error document) and an exit code."""
    from .output import reset
    from .signals import stopped

    reset()  # a fresh output object: --json, -q and -v set it while parsing
    stopped()  # and no interrupt kept from an earlier command of this process
    args, sandbox = _take_sandbox_flag(sys.argv[1:] if argv is None else list(argv))
    args, engine = _take_engine_option(args)
    if engine is not None:  # read by the sandbox manager, also for `peagle sandbox start`
        os.environ["PEAGLE_SANDBOX_ENGINE"] = engine
        sandbox = True
    from .advice import begin

    first = next((i for i, a in enumerate(args) if a not in ROOT_FLAGS), len(args))
    command = args[first] if first < len(args) else None
    only = command if command in (*COMMANDS, *PLUGIN_COMMANDS) else None
    # Every command this run suggests targets the same sandbox; its flags name the SDK's
    # keywords in errors (cli/faces.py).
    begin(sandbox=sandbox, command=only)
    try:
        if only in PLUGIN_COMMANDS:
            from ..plugins import command_groups, sandbox_plugin

            if only not in command_groups():
                sandbox_plugin()  # raises: the plugin is not installed, and how to install it
        if sandbox and only not in (None, *PLUGIN_COMMANDS) and "--help" not in args:
            from ..plugins import sandbox_plugin

            sandbox_plugin().cli_activate()
        # A root-level run (`peagle --help`, a mistyped command) builds plugin groups as
        # stubs: listing them must not import the emulator.
        app = build_app(only, plugins=only is not None)
        code = app(args=args, prog_name="peagle", standalone_mode=False)
        # typer >= 0.2x turns Ctrl-C into Exit(130), and `typer.Exit(n)` raised in a command,
        # into a *returned* exit code when standalone_mode is False: pass it on.
        if isinstance(code, int) and not isinstance(code, bool) and code:
            if code == 130:
                from .boundary import interrupted

                return interrupted(args)
            return code
    except (Exception, KeyboardInterrupt) as e:
        from .boundary import exit_code_for

        return exit_code_for(e, args)
    return 0


def _take_sandbox_flag(args: list[str]) -> tuple[list[str], bool]:
    """Strip a global `--sandbox` (before the command name); also on with PEAGLE_SANDBOX=1."""
    from ..settings import sandbox_requested

    wanted = sandbox_requested()
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--sandbox":
            wanted = True
            continue
        if not arg.startswith("-"):  # the command name: the rest belongs to the command
            return out + args[i:], wanted
        out.append(arg)
    return out, wanted


def _take_engine_option(args: list[str]) -> tuple[list[str], str | None]:
    """Strip a global `--sandbox-engine X` / `--sandbox-engine=X` (before the command)."""
    out: list[str] = []
    engine = None
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):  # the command name: the rest belongs to the command
            return out + args[i:], engine
        if arg == "--sandbox-engine" and i + 1 < len(args):
            engine, i = args[i + 1], i + 2
            continue
        if arg.startswith("--sandbox-engine="):
            engine = arg.split("=", 1)[1]
        else:
            out.append(arg)
        i += 1
    return out, engine


def run() -> None:
    """The `peagle` console script. SIGTERM and SIGHUP stop a command as Ctrl-C does
    (`cli/signals.py`); a Ctrl-C that lands before `main` has its boundary up (while
    Python imports it) or after the command answered still ends in one line, not a
    traceback."""
    from .signals import quiet_exit, stop_on_signals

    try:
        stop_on_signals()
        code = main()
    except KeyboardInterrupt as exc:
        from .boundary import exit_code_for

        code = exit_code_for(exc, sys.argv[1:])
    with quiet_exit():
        sys.exit(code)
