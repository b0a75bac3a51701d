"""The `peagle` command. Thin: each command calls the SDK and renders the result.

Only typer (click) is imported at start-up. Every command imports what it needs inside
its body, so `peagle --help` and `peagle plan` never import boto3 or rich tables.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from .lazy_commands import defer_coercion, is_listing_stub, listing_stub, real_command
from .options import JsonOpt, QuietOpt, VerboseOpt

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
    "health": ("health_cmd", "health_command"),
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
# Every root option of the product: anything else before the command is a plugin target's
# (or a mistake click names).
ROOT_OPTIONS = (*ROOT_FLAGS, "--version", "--help", "--install-completion", "--show-completion")


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


def _group_doc(help_text: str) -> Any:
    """A function whose docstring is `help_text`: what a listing stub copies its help from."""

    def group() -> None:
        """"""

    group.__doc__ = help_text
    return group


def _root_epilog() -> str:
    """The root help's epilog: the global options plugins' targets add (`peagle --local
    …`), read from their declarations, then EPILOG."""
    from .. import plugins

    lines = [
        f"{o.flag}{' ' + o.metavar if o.metavar else ''}: {o.help}"
        for target in plugins.targets()
        for o in target.options
    ]
    if not lines:
        return EPILOG
    # click keeps a paragraph that starts with \b as written (one option per line).
    return (
        "\b\nOptions added by plugins (before the command):\n"
        + "\n".join(lines)
        + ("\n\n" + EPILOG)
    )


def build_app(
    only: str | None = None, *, plugins_loaded: bool = True, stubs: bool | None = None
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
        stubs = only is None and not plugins_loaded
    epilog = EPILOG if only is not None else _root_epilog()
    app = typer.Typer(
        name="peagle",
        help="Deploy, verify, benchmark and cleanly remove P-EAGLE endpoints on SageMaker.",
        epilog=epilog,
        cls=PeagleGroup,
        no_args_is_help=True,
        add_completion=True,
        rich_markup_mode=None,  # plain click help: no rich import on --help
        pretty_exceptions_enable=False,
    )

    @app.callback(epilog=epilog)
    def _root(
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        verbose: VerboseOpt = False,
        version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Show the version."
        ),
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
    if only is None or only not in COMMANDS:
        from .. import plugins

        for name, group in plugins.commands().items():
            if only is None and not plugins_loaded:
                # `peagle --help` lists a plugin's group without importing it: a plugin's
                # code is imported only when one of its commands runs (a root-level run
                # that reaches it, `peagle -qv <group> …`, builds it then, as any stub).
                stub = listing_stub(_group_doc(group.help))
                app.add_typer(typer.Typer(), name=name, callback=stub, help=group.help)
            elif only is None or name == only:
                app.add_typer(group.load(), name=name, cls=PeagleGroup)
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
    args = sys.argv[1:] if argv is None else list(argv)
    from .advice import begin

    begin(carry=(), command=None)
    try:
        args, chosen = _take_target_options(args)
        first = next((i for i, a in enumerate(args) if a not in ROOT_FLAGS), len(args))
        command = args[first] if first < len(args) else None
        only = _command_to_build(command)
        # Every command this run suggests reaches the same target (cli/advice.py); its
        # flags name the SDK's keywords in errors (cli/faces.py).
        begin(carry=chosen.given if chosen else (), command=only)
        if chosen is not None and only in COMMANDS and "--help" not in args:
            state = chosen.target.activate(chosen.values)
            begin(carry=state.carry, command=only)
        # A root-level run (`peagle --help`, a mistyped command) builds plugin groups as
        # stubs: listing them must not import a plugin's code.
        app = build_app(only, plugins_loaded=only is not None)
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


def _command_to_build(command: str | None) -> str | None:
    """The command to register (`build_app(only)`): a product command, a plugin's group,
    or None (the root: help, or a mistyped command, which click names). A command of a
    known plugin that is not installed is a SpecError saying how to install it."""
    if command in COMMANDS:
        return command
    if command is None or command.startswith("-"):
        return None
    from .. import plugins

    if command in plugins.commands():
        return command
    known = plugins.known_command(command)
    if known is not None:
        _not_installed(f"`peagle {command}`", known)
    return None


def _not_installed(what: str, known: dict[str, str]) -> None:
    """SpecError: `what` comes from a plugin peagle knows of that is not installed."""
    from ..errors import SpecError

    raise SpecError(
        f"{what} comes from the {known['distribution']} plugin ({known['about']}), "
        "which is not installed",
        remedy=known["install"],
    )


class _Chosen:
    """The target a run's root options (or their settings) chose, and their values."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.values: dict[str, str | bool] = {}
        self.given: tuple[str, ...] = ()


def _take_target_options(args: list[str]) -> tuple[list[str], _Chosen | None]:
    """Strip the root options of plugin targets (before the command name: `peagle --local
    deploy …`), and note the target they, or their settings, choose. A given option's
    setting is exported, so the plugin reads one source (also for its own commands).
    Plugins are looked at only when a root option or a `PEAGLE_*` variable is not
    peagle's own: `peagle plan …` without either loads none."""
    from .. import settings

    root = itertools.takewhile(lambda arg: arg.startswith("-"), args)
    foreign = any(arg.split("=", 1)[0] not in ROOT_OPTIONS for arg in root)
    if not foreign and not settings.foreign_variables():
        return args, None
    from .. import plugins

    chosen: _Chosen | None = None
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):  # the command name: the rest belongs to the command
            out += args[i:]
            break
        flag, eq, inline = arg.partition("=")
        found = plugins.target_option(flag)
        if found is None:
            known = plugins.known_option(flag)
            if known is not None:  # a plugin's option, and that plugin is not installed
                _not_installed(flag, known)
            out.append(arg)
            i += 1
            continue
        target, option = found
        if chosen is None or chosen.target is not target:
            chosen = _Chosen(target)
        value: str | bool = True
        if option.takes_value:
            if eq:
                value = inline
            elif i + 1 < len(args):
                value, i = args[i + 1], i + 1
            else:
                from ..errors import SpecError

                raise SpecError(
                    f"{flag} needs a value ({option.metavar})", remedy=f"{flag} {option.metavar}"
                )
            chosen.given += (flag, str(value))
        else:
            chosen.given += (flag,)
        chosen.values[flag] = value
        if option.setting:
            settings.export(option.setting, "1" if value is True else str(value))
        i += 1
    if chosen is None:
        chosen = _chosen_by_settings(plugins.targets())
    return out, chosen


def _chosen_by_settings(targets: list[Any]) -> _Chosen | None:
    """The first target whose switch's setting is on (`PEAGLE_X=1`). The setting of an
    option that takes a value only sets that value: given on the command line, the option
    implies its target; set in the environment, it chooses nothing by itself."""
    from .. import plugins, settings

    for target in targets:
        for option in target.options:
            if option.takes_value or not option.setting:
                continue
            if settings.truthy(plugins.setting(option.setting)):
                chosen = _Chosen(target)
                chosen.values[option.flag] = True
                return chosen
    return None


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
