"""The measurement and traffic operations as client methods (issue 34): no session
parameters, every parameter a documented keyword, and one error per bad argument that
Python words with the keyword and the CLI with its flag (`cli/faces.py`)."""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.cli.faces import CliFace
from sm_peagle.client import Client
from sm_peagle.errors import SpecError

OPS = ("bench", "race", "tune_k", "report", "sweep", "invoke", "chat")
SESSION = {"region", "aws", "say", "on_connect"}


@pytest.mark.parametrize("op", OPS)
def test_each_operation_is_a_method_without_session_parameters(op: str) -> None:
    params = inspect.signature(getattr(Client, op)).parameters
    assert not SESSION & set(params), op
    assert all(p.kind is not p.VAR_KEYWORD for p in params.values()), op


@pytest.mark.parametrize("op", OPS)
def test_every_parameter_is_documented_in_args(op: str) -> None:
    doc = inspect.getdoc(getattr(Client, op)) or ""
    args = doc.split("Args:", 1)[1].split("Returns:", 1)[0]
    named = set(re.findall(r"^    (\w+):", args, re.M))
    params = set(inspect.signature(getattr(Client, op)).parameters) - {"self"}
    assert named == params, op
    assert "Returns:" in doc and "Raises:" in doc


def test_no_measure_module_imports_the_endpoint_module() -> None:
    """`sweep` deploys through the client: ops/ sits below sm_peagle.endpoint (issue 34)."""
    import ast

    root = Path(sm_peagle.__file__).parent / "ops"
    found = []
    for path in sorted(root.glob("measure*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = (node.module or "") if node.level == 0 else f"..{node.module or ''}"
                if target in ("sm_peagle.endpoint", "..endpoint"):
                    found.append(path.name)
    assert found == []


def _refused(call: Any) -> SpecError:
    with pytest.raises(SpecError) as info:
        call()
    return info.value


# (call on a client, CLI command, field, words in Python, words at the CLI)
CASES = [
    (lambda c: c.bench("ep", concurrency=0), "bench", "concurrency",
     "concurrency=: expected positive integers", "--concurrency: expected positive integers"),
    (lambda c: c.bench("ep", search=True), "bench", "slo",
     "search= needs slo= (what must hold)", "--search-max-concurrency needs --slo"),
    (lambda c: c.bench("ep", out="/proc/x/y.json", requests=0), "bench", "requests",
     "requests= must be at least 1", "--requests must be at least 1"),
    (lambda c: c.bench("ep", rate="fast"), "bench", "rate",
     "rate=: expected requests/s", "--rate: expected requests/s"),
    (lambda c: c.bench("ep", slo="ttft"), "bench", "slo",
     "slo=: expected NAME=VALUE", "--slo: expected NAME=VALUE"),
    (lambda c: c.race("ep", components=["a"]), "race", "components",
     "components= races two components", "--component races two components"),
    (lambda c: c.tune_k("ep", tolerance=1), "tune-k", "tolerance",
     "position_cost= must be >= 0 and tolerance=", "--position-cost must be >= 0 and --tolerance"),
    (lambda c: c.sweep("gpt-oss-20b", modes="fast"), "sweep", "modes",
     "modes=: unknown mode(s) ['fast']", "--modes: unknown mode(s) ['fast']"),
    (lambda c: c.sweep("gpt-oss-20b", k="3,,7"), "sweep", "k",
     "k=: expected comma-separated integers", "-k: expected comma-separated integers"),
    (lambda c: c.invoke("ep", "Hi", raw={"messages": []}), "invoke", "raw",
     "pass either a prompt or raw=, not both", "pass either a prompt or --raw, not both"),
    (lambda c: c.invoke("ep", "  "), "invoke", "prompt",
     "prompt: empty; give some text (or raw='payload.json')",
     "prompt: empty; give some text (or --raw payload.json)"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "command", "field", "python", "cli"), CASES)
def test_one_error_two_wordings(call: Any, command: str, field: str, python: str,
                                cli: str) -> None:  # fmt: skip
    err = _refused(lambda: call(Client(region="us-east-1")))  # refused before any AWS call
    assert err.field == field
    assert python in str(err) and "--" not in str(err)
    assert cli in err.one_line(CliFace(command))


def test_a_suggested_command_is_a_call_in_python_and_a_command_at_the_cli() -> None:
    err = _refused(lambda: Client(region="us-east-1").invoke("ep"))
    assert err.remedy == "sm_peagle.invoke('NAME', 'Hi')"
    assert err.remedy is not None and "invoke NAME Hi" in err.remedy.render(CliFace("invoke"))


def test_the_module_functions_take_the_old_session_keywords_for_one_release() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(SpecError):
            sm_peagle.bench("ep", concurrency=0, region="us-east-1")
    assert any(issubclass(w.category, FutureWarning) and "Client(region=)" in str(w.message)
               for w in seen)  # fmt: skip
    assert "region" not in inspect.signature(sm_peagle.bench).parameters
