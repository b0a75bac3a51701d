"""The documentation site's reference pages, generated from the code at every build (an
MkDocs hook, mkdocs.yml `hooks:`), so they cannot drift from it:

- reference/cli.md: every command's `peagle CMD --help`, from the typer app;
- reference/sdk.md: every public name of `sm_peagle`, for mkdocstrings to render
  from its docstrings at build time;
- reference/spec.md: the deployment spec, from its JSON Schema (`peagle schema`);
- reference/exit-codes.md: exit codes, the one-line error and the `--json` contract,
  and every error class with its exit code (sm_peagle.errors);
- reference/settings.md: every `PEAGLE_*` setting (sm_peagle.settings.VARIABLES).

The pages are never committed: the build adds them (`on_files`). To read them without a
build, `python scripts/docs_reference.py` writes them to build/reference/. The unit test
tests/unit/test_docs_reference.py compares the CLI page with the real `peagle CMD --help`
of every command and the spec page with the JSON Schema `peagle schema` prints.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The width `peagle CMD --help` is rendered at (click wraps at min(COLUMNS, 80) - 2).
HELP_COLUMNS = "80"


def _notice(source: str) -> str:
    return f"<!-- Generated at build time by scripts/docs_reference.py from {source}. -->\n"


# -- CLI ------------------------------------------------------------------------------


def help_text(path: tuple[str, ...]) -> str:
    """What `peagle *path --help` prints, through the CLI's own entry point (in process,
    at HELP_COLUMNS, without colour)."""
    from click.testing import CliRunner

    from sm_peagle.cli.app import main

    runner = CliRunner(env={"COLUMNS": HELP_COLUMNS, "NO_COLOR": "1"})
    with runner.isolation() as streams:
        code = main([*path, "--help"])
        sys.stdout.flush()
        out = streams[0].getvalue().decode()
    if code != 0:
        raise RuntimeError(f"peagle {' '.join(path)} --help exited {code}")
    return out


def command_paths() -> list[tuple[str, ...]]:
    """Every command and group, as `peagle --help` and each group's help list them (hidden
    commands left out), depth first: (), ("models",), …, ("drafter",), ("drafter", "check")."""
    out: list[tuple[str, ...]] = []

    def walk(cmd: Any, path: tuple[str, ...], parent: Any) -> None:
        out.append(path)
        if not hasattr(cmd, "list_commands"):  # a command, not a group
            return
        # typer (>= 0.2x) carries its own click: the context class is the command's own.
        ctx = cmd.context_class(cmd, info_name=path[-1] if path else "peagle", parent=parent)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                walk(sub, (*path, name), ctx)

    walk(_root_command(), (), None)
    return out


def _root_command() -> Any:
    """The whole `peagle` command tree, plugin groups included."""
    import typer

    from sm_peagle.cli.app import build_app

    return typer.main.get_command(build_app())


def cli_page() -> str:
    paths = command_paths()
    parts = [
        "# CLI reference\n\n",
        _notice("the typer app (`peagle CMD --help` for every command)"),
        "\nEvery command's `--help`, exactly as `peagle` prints it (at 80 columns). Global "
        "options go before the command (`peagle --sandbox ls`); `--json`, `-q/--quiet` and "
        "`-v/--verbose` also work after it. Exit codes and the `--json` contract: "
        "[Exit codes and `--json`](exit-codes.md).\n\n",
        "| command | what it does |\n|---|---|\n",
    ]
    summaries = _summaries()
    for path in paths[1:]:
        title = "peagle " + " ".join(path)
        parts.append(f"| [`{title}`](#{_anchor(title)}) | {summaries[path]} |\n")
    for path in paths:
        title = " ".join(("peagle", *path))
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        parts.append(f"\n{level} {title}\n\n```text\n{help_text(path).rstrip()}\n```\n")
    return "".join(parts)


def _summaries() -> dict[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        out[path] = _cell(cmd.get_short_help_str(limit=300))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(_root_command(), ())
    return out


def _anchor(title: str) -> str:
    """The id Python-Markdown's toc extension gives a heading of plain words."""
    return "-".join(title.lower().replace("-", " - ").split()).replace("---", "-")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# -- the deployment spec ----------------------------------------------------------------


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type_of(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = _ref_name(prop["$ref"])
        return f"[{name}](#{name.lower()})"
    if "anyOf" in prop:
        return " or ".join(_type_of(p) for p in prop["anyOf"])
    if "allOf" in prop and len(prop["allOf"]) == 1:
        return _type_of(prop["allOf"][0])
    if "enum" in prop:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(prop.get('items', {}))}"
    if kind == "object":
        values = prop.get("additionalProperties")
        if isinstance(values, dict):
            return f"map of string to {_type_of(values)}"
        return "object"
    return str(kind)


_BOUNDS = {
    "minimum": "≥ {}",
    "exclusiveMinimum": "> {}",
    "maximum": "≤ {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "pattern": "matches `{}`",
}


def _bounds(prop: dict[str, Any]) -> list[str]:
    out = [text.format(prop[key]) for key, text in _BOUNDS.items() if key in prop]
    for sub in prop.get("anyOf", []):
        out += _bounds(sub)
    return out


def _uses(schema: dict[str, Any]) -> dict[str, list[str]]:
    """definition name -> the spec keys that hold one ("endpoint", "inference_components.
    components[]")."""
    defs = schema.get("$defs", {})
    out: dict[str, list[str]] = {}

    def refs(prop: dict[str, Any]) -> Iterator[tuple[str, str]]:
        if "$ref" in prop:
            yield _ref_name(prop["$ref"]), ""
        for sub in (*prop.get("anyOf", []), *prop.get("allOf", [])):
            yield from refs(sub)
        if isinstance(prop.get("items"), dict):
            yield from ((n, s + "[]") for n, s in refs(prop["items"]))
        if isinstance(prop.get("additionalProperties"), dict):
            yield from ((n, s + ".*") for n, s in refs(prop["additionalProperties"]))

    def walk(node: dict[str, Any], prefix: str, seen: tuple[str, ...]) -> None:
        for key, prop in node.get("properties", {}).items():
            for name, suffix in refs(prop):
                where = f"{prefix}{key}{suffix}"
                out.setdefault(name, []).append(where)
                if name not in seen and "properties" in defs.get(name, {}):
                    walk(defs[name], where + ".", (*seen, name))

    walk(schema, "", ())
    return out


def _definition(name: str, node: dict[str, Any], used_by: list[str]) -> str:
    lines = [f"\n## {name}\n"]
    if used_by:
        lines.append("\nThe value of " + ", ".join(f"`{u}`" for u in used_by) + ".\n")
    if node.get("description"):
        lines.append("\n" + node["description"].strip() + "\n")
    if "enum" in node:
        lines.append("\nOne of: " + ", ".join(f"`{v}`" for v in node["enum"]) + ".\n")
    props = node.get("properties", {})
    if props:
        required = set(node.get("required", []))
        if node.get("additionalProperties") is False:
            lines.append("\nUnknown keys are errors.\n")
        # The "allowed" column only where some key of this object has bounds.
        bounded = any(_bounds(prop) for prop in props.values())
        head = ["key", "type", "default", *(["allowed"] if bounded else []), "description"]
        lines.append("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
        for key, prop in props.items():
            default = (
                "required"
                if key in required
                else (f"`{json.dumps(prop['default'])}`" if "default" in prop else "")
            )
            row = [
                f"`{key}`",
                _type_of(prop),
                default,
                *(["; ".join(_bounds(prop))] if bounded else []),
                _cell(prop.get("description", "")),
            ]
            lines.append("| " + " | ".join(row) + " |\n")
    return "".join(lines)


def spec_schema() -> dict[str, Any]:
    import sm_peagle

    return sm_peagle.schema()


def spec_page() -> str:
    schema = spec_schema()
    uses = _uses(schema)
    parts = [
        "# Deployment spec reference\n\n",
        _notice("the spec's JSON Schema (`peagle schema`, `sm_peagle.schema()`)"),
        "\nA deployment spec is a YAML or JSON file (`peagle plan -f`, `deploy -f`, `apply -f`, "
        "`diff -f`; `sm_peagle.load_spec`). Every key of every object is listed below, from "
        "the JSON Schema that `peagle schema` prints; the whole schema closes the page. "
        "`templates/specs/` in the repository has one spec per catalog model and mode.\n",
        _definition(schema.get("title", "DeploymentSpec"), schema, []),
    ]
    for name, node in sorted(schema.get("$defs", {}).items()):
        parts.append(_definition(name, node, uses.get(name, [])))
    parts.append(
        "\n## The JSON Schema\n\nExactly what `peagle schema` prints:\n\n```json\n"
        + json.dumps(schema, indent=2, ensure_ascii=False)
        + "\n```\n"
    )
    return "".join(parts)


# -- exit codes and the --json contract ---------------------------------------------------

_EXIT_CODES = """\
| exit code | meaning |
|---:|---|
| 0 | success (`diff --detailed-exitcode`: the endpoint matches the spec) |
| 1 | a failure in AWS or the sandbox (including "cannot reach" after the bounded retries), \
a missing endpoint, or "n" at a confirmation prompt (prints `aborted`) |
| 2 | bad input: nothing was sent (an unknown model or option, a bad region, a spec file \
that does not parse, `-k` with `--mode baseline`, an empty prompt, a missing optional library \
such as matplotlib for `--plot`, …) |
| 3 | `diff --detailed-exitcode` only: apply would create or change the endpoint |
| 130 | Ctrl-C (after a deploy's rollback, or after it was interrupted in turn: then \
the error line names what is left and the one command that removes it, e.g. \
`error: interrupted; rollback stopped: left model X (fix: peagle gc --operation OP \
--yes removes exactly these)`; with `--json`, `left`, `operation` and `command`) |
| 143, 129 | SIGTERM (a cancelled CI job, `timeout`, `kill`) or SIGHUP (a closed terminal): \
rolled back as for Ctrl-C, one line `error: terminated by SIGTERM` |
"""

_CONTRACT = """\
## The error line

Errors are one line on stderr, `error: <what> (fix: <remedy>)`, never a traceback. When
several things are wrong (two bad S3 URIs, two failed checks), the line names every one,
each with its fix; so do `--json` and the SDK exception. A mistyped option's fix names the
closest options (`did you mean --json?`), else `peagle CMD --help`; a spec file that does
not parse says `file:line:column` and what was expected there. `PEAGLE_DEBUG=1` prints the
traceback of an unexpected error instead (see [Settings](settings.md)).

## `--json`

`--json` prints exactly one JSON document on stdout: the command's result, or on failure

```json
{
  "label": "AWS",
  "error": {"type": "SpecError", "message": "…", "fix": "…", "exit_code": 2}
}
```

When the error is about one parameter, `error` also says which, what was given and the
rule it broke, so a program need not parse the message:

```json
{
  "label": "AWS",
  "error": {
    "type": "SpecError", "message": "…", "fix": "…", "exit_code": 2,
    "field": "k", "value": 0, "rule": "…"
  }
}
```

`field` is the parameter's SDK keyword (`k`, `component`, `results`), the same name the
SDK's exception carries in `.field` (the CLI's flag for it is in the message: `-k`);
`value` is the value given, when recorded; `rule` is what the value must satisfy, in
words, when the rule is short. `error` also has `errors`, one entry (`name`, `message`,
`fix`) per failed check, when there are several (`CheckFailed`).

The error line still goes to stderr, as do progress notes and the `talking to:` line, so
stdout stays one parseable document. A command that fails after
producing its result keeps that one document (`plan --json` with a failed check: the checks
are in it, and the exit code is 2). `logs --follow --json` is the one stream: JSON Lines,
one event per line. `--json` is a global option and also works after the command.

### Where a document came from: `label`

Every document says where it came from under `"label"`, its first key, so nobody mistakes
the sandbox, or a CPU engine's figures, for AWS: {labels}.
A list result stays a list, and each object in it carries the label; each line of
`logs --follow --json` carries it; a benchmark result keeps its own. `peagle schema` is
the exception: it prints the spec's JSON Schema as is, a description of peagle's input
rather than an output of AWS or the sandbox.
"""


def error_classes() -> list[type]:
    """Every error class `sm_peagle` exports, in its export order."""
    import sm_peagle
    from sm_peagle.errors import PeagleError

    out = []
    for name in sm_peagle.__all__:
        obj = getattr(sm_peagle, name)
        if isinstance(obj, type) and issubclass(obj, PeagleError):
            out.append(obj)
    return out


def _labels() -> str:
    """The source labels: the product's (`AWS`) and every installed plugin's, as they
    declare them through the contract (`*` in a label stands for a version)."""
    from sm_peagle import plugins, settings

    found = [settings.AWS] + [
        lab.label.replace("*", "X.Y.Z") for p in plugins.installed() for lab in p.labels()
    ]
    return ", ".join(f"`{label}`" for label in found[:-1]) + f" or `{found[-1]}`"


def exit_codes_page() -> str:
    rows = []
    for cls in error_classes():
        parent = cls.__mro__[1]
        base = f"`{parent.__name__}`" if parent is not Exception else ""
        doc = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        rows.append(f"| `{cls.__name__}` | {cls.exit_code} | {base} | {_cell(doc)} |\n")
    return "".join(
        [
            "# Exit codes and `--json`\n\n",
            _notice("sm_peagle.errors (the error classes and their exit codes)"),
            "\nEvery `peagle` command ends with one of these exit codes:\n\n",
            _EXIT_CODES,
            "\n",
            _CONTRACT.replace("{labels}", _labels()),
            "\n## Error classes\n\nThe SDK raises these (all importable from `sm_peagle`); the "
            "CLI prints the error line above and exits with the class's code. `type` in the "
            "`--json` error document is the class name. What causes each and how to fix it: "
            "[Troubleshooting](../troubleshooting.md).\n\n",
            "| class | exit code | subclass of | what it means |\n|---|---:|---|---|\n",
            *rows,
        ]
    )


# -- settings -------------------------------------------------------------------------


def settings_page() -> str:
    from sm_peagle import plugins, settings

    rows = [f"| `{name}` | {_cell(what)} |\n" for name, what in settings.VARIABLES.items()]
    by_plugin: dict[str, list[str]] = {}
    for plugin, setting in plugins.settings():
        by_plugin.setdefault(plugin, []).append(f"| `{setting.name}` | {_cell(setting.doc)} |\n")
    extra = [
        f"\n## The {name} plugin's\n\nDeclared by the plugin (`Plugin.settings()`, "
        "[the plugin contract](../guides/plugins.md)) and read through "
        "`sm_peagle.contract.setting`.\n\n| variable | what it does |\n|---|---|\n"
        + "".join(plugin_rows)
        for name, plugin_rows in by_plugin.items()
    ]
    return "".join(
        [
            "# Settings\n\n",
            _notice("sm_peagle.settings.VARIABLES"),
            "\npeagle reads these environment variables, all in one module "
            "(`sm_peagle/settings.py`; a test holds that no other module reads one). AWS's own "
            "settings (profiles, `AWS_REGION`, `AWS_ENDPOINT_URL[_<SERVICE>]`) work as usual. "
            "peagle's own come first, then each installed plugin's.\n\n",
            "| variable | what it does |\n|---|---|\n",
            *rows,
            *extra,
        ]
    )


# -- the SDK --------------------------------------------------------------------------

# The page: the client first (its methods are the operations; the module-level functions
# are a default client's), then the results, then the errors, then the rest by module.
CLIENT = "sm_peagle.client.Client"
# (title, module prefixes), in page order, for what is neither the client, a result nor an
# error. Every public name is rendered: one whose module no section names lands in OTHER
# (the page's last section) rather than failing a build over a heading, and the unit test
# lists what landed there so a section can be added.
SDK_SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    (
        "Deploy and plan",
        ("sm_peagle.endpoint", "sm_peagle.ops.deployment", "sm_peagle.lifecycle"),
    ),
    ("The deployment spec", ("sm_peagle.planning",)),
    ("Endpoints: status, list, logs, delete, gc", ("sm_peagle.ops.endpoints",)),
    ("Changes: update, apply, diff, adopt", ("sm_peagle.ops.changes",)),
    ("Sessions", ("sm_peagle.ops.session", "sm_peagle.client")),
    ("Traffic and measurement", ("sm_peagle.ops.measure", "sm_peagle.benchmarking")),
    ("Catalog", ("sm_peagle.ops.catalog", "sm_peagle.catalog")),
    ("Infrastructure as code and IAM", ("sm_peagle.ops.iac", "sm_peagle.iac")),
    ("Drafter heads", ("sm_peagle.ops.drafter", "sm_peagle.drafter")),
    ("The sandbox", ("sm_peagle.ops.sandbox", "sm_peagle.plugins")),
    ("Doctor", ("sm_peagle.ops.doctor",)),
]
OTHER = ("More of the SDK", ())

_INTRO = """\
The SDK is the product; the CLI is a thin skin over it. Everything here is importable from
`sm_peagle`, and each entry is rendered from the code's own docstring and signature. A
guided tour: [the SDK guide](../guides/sdk.md).

Start with a [`Client`](#the-client): it holds the session once (the region or a ready
AWS context, and the progress callbacks), and every operation is one of its methods,
each returning one of the [results](#results) or raising one of the [errors](#errors).
"""

_MODULE_FUNCTIONS = """\
The client's methods, each described below. Most are also module-level functions
(`sm_peagle.deploy(…)`, `sm_peagle.status(…)`): each is the same method of a default
client, which reads the region and credentials from the environment at each call (as
`huggingface_hub`'s functions are `HfApi()`'s methods). `peagle_sandbox.client()` hands
out a client aimed at the local sandbox.

| method | module-level function | what it does |
|---|---|---|
"""

_RESULTS = """\
Every operation returns a typed result: a frozen dataclass whose fields are listed with
it, and whose `to_dict()` is exactly the document the CLI prints with `--json`.
"""

_ERRORS = """\
Every error is a `PeagleError` (its class says which kind, and `exit_code` is what the CLI
exits with: 2 for bad input, where nothing was sent; 1 for a failure in AWS). Besides the
message, an error carries what a program needs to act on it:

| attribute | what it holds |
|---|---|
| `message` | what went wrong, in one line |
| `remedy` | what fixes it, or None |
| `field` | the parameter that is wrong, by its keyword (`"k"`, `"component"`), or None |
| `value` | the value given for it (`UNSET` when not recorded) |
| `rule` | what the value must satisfy, in words (`"an integer >= 1"`), or None |

`str(error)`, `message` and `remedy` speak Python: they name keyword arguments (`k=5`) and
SDK calls (`sm_peagle.delete('ep')`). What they name is kept as data, so the CLI prints the
same error with its flags (`-k 5`) and commands (`peagle delete ep --yes`): a message or
remedy is a `Text` (a `str` whose value is the Python wording) made of literal words,
`Param` (a parameter, with or without a value), `Call` (an SDK call suggested as a fix) and
`Phrase` (words that differ otherwise, such as the sandbox), all in `sm_peagle.errors`.
`to_dict()` is the error document of `--json` (`type`, `message`, `fix`, `exit_code`, and
`field`, `value`, `rule` when the error names a parameter; see
[Exit codes and `--json`](exit-codes.md)).
"""


def sdk_names() -> list[tuple[str, str]]:
    """(name, defining module) for every name in `sm_peagle.__all__` but `__version__`."""
    import sm_peagle

    out = []
    for name in sm_peagle.__all__:
        if name == "__version__":
            continue
        obj = getattr(sm_peagle, name)
        module = getattr(obj, "__module__", None) if callable(obj) else None
        if module is None:  # a constant: the module whose __all__ exports it
            module = next(
                m
                for m, mod in sorted(sys.modules.items())
                if m.startswith("sm_peagle.") and name in getattr(mod, "__all__", ())
            )
        out.append((name, module))
    return out


def client_operations() -> list[str]:
    """The client's public methods (its operations), in the order of its bases (one mixin
    per group of operations) and of each mixin's source."""
    from sm_peagle.client import Client

    out: list[str] = []
    for cls in reversed(Client.__mro__):
        for name, value in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(value) and name not in out:
                out.append(name)
    # Grouped as the bases list them: the client's own first, then each mixin's.
    order = {c: i for i, c in enumerate(Client.__mro__)}
    return sorted(out, key=lambda n: order[_defined_in(Client, n)])


def _defined_in(cls: type, name: str) -> type:
    return next(c for c in cls.__mro__ if name in vars(c))


def _summary(obj: Any) -> str:
    """The first sentence of a docstring's first paragraph, as one table cell."""
    doc = inspect.getdoc(obj) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    end = re.search(r"(?<=[a-z0-9)`])(?<!e\.g)(?<!i\.e)\.(\s|$)", first)
    return _cell(first[: end.start() + 1] if end else first)


def _kind(name: str, obj: Any, operations: list[str]) -> str:
    """Where a public name goes: "client" (the client, or an operation: a module-level
    function that is the default client's method), "result", "error" or "rest"."""
    if name == "Client" or (name in operations and not inspect.isclass(obj)):
        return "client"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "error"
    if inspect.isclass(obj) and callable(getattr(obj, "to_dict", None)):
        return "result"
    return "rest"


def sdk_page() -> str:
    import sm_peagle
    from sm_peagle.client import Client

    operations = client_operations()
    results: list[str] = []
    errors: list[str] = []
    rest: dict[str, list[str]] = {title: [] for title, _ in (*SDK_SECTIONS, OTHER)}
    module_functions: set[str] = set()
    for name, module in sdk_names():
        kind = _kind(name, getattr(sm_peagle, name), operations)
        if kind == "client" and name != "Client":
            module_functions.add(name)
        entry = f"::: {module}.{name}\n"
        if kind == "result":
            results.append(entry)
        elif kind == "error":
            errors.append(entry)
        elif kind == "rest":
            title = next((t for t, p in SDK_SECTIONS if module.startswith(p)), OTHER[0])
            rest[title].append(entry)
    inherited = [n for n in operations if _defined_in(Client, n) is not Client]
    parts = [
        "# Python SDK reference\n\n",
        _notice("`sm_peagle.__all__`; rendered from the docstrings by mkdocstrings"),
        "\n",
        _INTRO,
        "\n## The client\n\n",
    ]
    # An overview of the operations first, each linked to its method below.
    if operations:
        parts.append(_MODULE_FUNCTIONS)
        for name in operations:
            function = f"`sm_peagle.{name}`" if name in module_functions else ""
            summary = _summary(getattr(Client, name))
            parts.append(f"| [`{name}`][{CLIENT}.{name}] | {function} | {summary} |\n")
        parts.append("\n")
    parts += [
        f"::: {CLIENT}\n",
        # The operations are the mixins' methods: rendered as the client's own.
        "    options:\n      members_order: source\n"
        + (f"      inherited_members: {json.dumps(inherited)}\n" if inherited else ""),
    ]
    if results:
        parts.append("\n## Results\n\n" + _RESULTS + "\n" + "\n".join(results))
    if errors:
        parts.append("\n## Errors\n\n" + _ERRORS + "\n" + "\n".join(errors))
    for title, entries in rest.items():
        if entries:
            parts.append(f"\n## {title}\n\n" + "\n".join(entries))
    return "".join(parts)


# -- the MkDocs hook and the command line ------------------------------------------------

PAGES: dict[str, Callable[[], str]] = {
    "cli.md": cli_page,
    "sdk.md": sdk_page,
    "spec.md": spec_page,
    "exit-codes.md": exit_codes_page,
    "settings.md": settings_page,
}


def generate() -> dict[str, str]:
    """{"reference/cli.md": text, …}: the pages as the site serves them."""
    return {f"reference/{name}": render() for name, render in PAGES.items()}


# The site's one stylesheet (mkdocs.yml, extra_css), added by the hook so it lives with the
# pages whose tables need it: identifiers in a table's first column (spec keys, commands,
# variables, error classes) never break mid-word, as Material's code style lets them.
STYLESHEET_URI = "assets/peagle.css"
STYLESHEET = """\
.md-typeset table:not([class]) td:first-child code {
  white-space: nowrap;
  word-break: normal;
}
"""


def on_files(files: Any, config: Any, **_: Any) -> Any:
    """MkDocs hook: add the reference pages, generated from the code of this build, to the
    site's files (so the nav, links and anchors into them are checked like any page's),
    and the site's stylesheet."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    try:
        pages = generate()
    except Exception as exc:  # one line in the build's output, not a traceback
        raise PluginError(f"cannot generate the reference pages: {exc}") from exc
    pages[STYLESHEET_URI] = STYLESHEET
    for uri, text in pages.items():
        if files.get_file_from_path(uri) is not None:
            raise PluginError(
                f"docs/{uri} is generated at build time (scripts/docs_reference.py): remove "
                "the file from docs/"
            )
        files.append(File.generated(config, uri, content=text))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "build" / "reference",
        help="where to write the pages (default build/reference, git-ignored)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    for uri, text in generate().items():
        path = args.out / Path(uri).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
