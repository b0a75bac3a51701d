"""The `peagle` command. Thin: each command calls the SDK and renders the result.

Only typer (click) is imported at start-up. Every command imports what it needs inside
its body, so `peagle --help` and `peagle plan` never import boto3 or rich tables.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import typer

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
}
# Command groups a plugin adds through the `sm_peagle.commands` entry point: the sandbox's
# `peagle sandbox …` (sm_peagle/plugins.py). Named here so `peagle sandbox` without the
# plugin says how to install it instead of "No such command".
PLUGIN_COMMANDS = ("sandbox",)


def _print_version(value: bool) -> None:
    if value:
        from ..version import __version__

        typer.echo(f"peagle {__version__}")
        raise typer.Exit(0)


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app; with `only`, just that command.

    typer turns every parameter of every registered command into click objects (and,
    since 0.2x, pydantic adapters) when it runs, which costs ~15-20 ms for the whole tree
    on the `peagle plan` path. Registering only the command being run avoids that; the
    root callback keeps the group shape so `peagle plan …` parses the same either way.
    """
    app = typer.Typer(
        name="peagle",
        help="Deploy, verify, benchmark and cleanly remove P-EAGLE endpoints on SageMaker.",
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,  # plain click help: no rich import on --help
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Show the version."
        ),
        sandbox: bool = typer.Option(
            False,
            "--sandbox",
            help="Run against a local SageMaker sandbox (started on demand; also "
            "PEAGLE_SANDBOX=1). See `peagle sandbox --help`.",
        ),
        sandbox_engine: str = typer.Option(
            None,
            "--sandbox-engine",
            help="The sandbox's engine: simulated (default) or vllm, the real vLLM CPU "
            "engine (also PEAGLE_SANDBOX_ENGINE). Implies --sandbox.",
        ),
    ) -> None:
        """Deploy, verify, benchmark and cleanly remove P-EAGLE endpoints on SageMaker."""

    for name, (module, attr) in COMMANDS.items():
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(f".{module}", __package__), attr)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)
    if only is None or only in PLUGIN_COMMANDS:
        from ..plugins import command_groups

        for name, ep in command_groups().items():
            if only is None or name == only:
                app.add_typer(ep.load(), name=name)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # the full app, for tests and tools that import it
        return build_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; `cli/boundary.py` turns whatever stops it into one line
    (and, with --json, one JSON error document) and an exit code."""
    from .output import json_printed

    json_printed(reset=True)
    args, sandbox = _take_sandbox_flag(sys.argv[1:] if argv is None else list(argv))
    args, engine = _take_engine_option(args)
    if engine is not None:  # read by the sandbox manager, also for `peagle sandbox start`
        os.environ["PEAGLE_SANDBOX_ENGINE"] = engine
        sandbox = True
    only = args[0] if args and args[0] in (*COMMANDS, *PLUGIN_COMMANDS) else None
    try:
        if only in PLUGIN_COMMANDS:
            from ..plugins import command_groups, sandbox_plugin

            if only not in command_groups():
                sandbox_plugin()  # raises: the plugin is not installed, and how to install it
        if sandbox and only not in (None, *PLUGIN_COMMANDS) and "--help" not in args:
            from ..plugins import sandbox_plugin

            sandbox_plugin().cli_activate()
        code = build_app(only)(args=args, standalone_mode=False)
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
    wanted = os.environ.get("PEAGLE_SANDBOX", "").lower() in ("1", "true", "yes")
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
    sys.exit(main())
