"""One settings module: only `sm_peagle/settings.py` reads a `PEAGLE_*` variable, every
variable read anywhere (product or sandbox) is declared there, and the settings reference
page (docs/reference/settings.md, generated from VARIABLES at build time) lists them all.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from sm_peagle import settings

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "sm_peagle", ROOT / "sandbox" / "peagle_sandbox"]
SETTINGS = ROOT / "sm_peagle" / "settings.py"


def _environ(node: ast.AST) -> bool:
    """`os.environ` or `environ` (a mapping passed in to be written is not a read)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id == "environ"


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "PEAGLE_…"`: a read through a constant is a read too."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    out[target.id] = node.value.value
    return out


def _value(node: ast.AST, constants: dict[str, str]) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _environ_or_either(node: ast.AST) -> bool:
    """`environ`, or a conditional one of whose branches is `environ`."""
    if isinstance(node, ast.IfExp):
        return _environ(node.body) or _environ(node.orelse)
    return _environ(node)


def env_reads(source: str) -> list[str]:
    """PEAGLE_* names read from the environment: environ.get(X), environ[X] (load),
    os.getenv(X), X in environ, where X is a literal or a module-level constant, and
    `(os.environ if … else …).get(X)` too."""
    out = []
    tree = ast.parse(source)
    constants = _constants(tree)
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            if (
                isinstance(f, ast.Attribute) and f.attr == "get" and _environ_or_either(f.value)
            ) or (
                isinstance(f, ast.Attribute | ast.Name)
                and getattr(f, "attr", getattr(f, "id", None)) == "getenv"
            ):
                name = _value(node.args[0], constants)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _environ_or_either(node.value)
        ):
            name = _value(node.slice, constants)
        elif (
            isinstance(node, ast.Compare)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(_environ(c) for c in node.comparators)
        ):
            name = _value(node.left, constants)
        if isinstance(name, str) and name.startswith("PEAGLE_"):
            out.append(name)
    return out


def settings_names_used(source: str) -> list[str]:
    """PEAGLE_* names passed to settings.get("X") / get("X") / env_flag("X")."""
    return re.findall(r"\b(?:get|env_flag)\(\s*\"(PEAGLE_[A-Z_]+)\"", source)


# Programs of their own, not peagle: the training job's script (shipped as the job's `code`
# channel, run where peagle is not installed) and the sandbox's CPU trainer backend that runs
# inside that job; their variables are the job's environment, set by whoever runs the job.
JOB_PROGRAMS = ("sm_peagle/training/source/", "sandbox/peagle_sandbox/trainer_cpu/")


def _files() -> list[Path]:
    return [
        p
        for root in SOURCES
        for p in sorted(root.rglob("*.py"))
        if not p.relative_to(ROOT).as_posix().startswith(JOB_PROGRAMS)
    ]


def test_only_settings_reads_peagle_variables() -> None:
    bad = {
        str(p.relative_to(ROOT)): names
        for p in _files()
        if p != SETTINGS and (names := env_reads(p.read_text()))
    }
    assert bad == {}


def test_every_variable_used_is_declared() -> None:
    # peagle's own (settings.VARIABLES) or a plugin's, declared through the contract
    # (`Plugin.settings()`), which the settings reference lists as well.
    from sm_peagle import plugins

    declared = set(settings.VARIABLES) | {s.name for _, s in plugins.settings()}
    used = {n for p in _files() for n in settings_names_used(p.read_text())}
    undeclared = {n for n in used if n not in declared}
    assert not {n for n in undeclared if not n.startswith("PEAGLE_LOCUST_")}, undeclared


def test_the_settings_reference_lists_every_variable() -> None:
    # docs/reference/settings.md is generated at build time by scripts/docs_reference.py.
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs_reference

    page = docs_reference.settings_page()
    missing = [n for n in settings.VARIABLES if f"| `{n}` |" not in page]
    assert missing == []


def test_an_undeclared_name_is_refused() -> None:
    with pytest.raises(KeyError):
        settings.get("PEAGLE_NOT_A_SETTING")


def test_values_are_read_when_asked(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "s"))
    assert settings.state_dir() == tmp_path / "s"
    monkeypatch.delenv("PEAGLE_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "x"))
    assert settings.state_dir() == tmp_path / "x" / "peagle"
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.5")
    assert settings.poll_seconds() == 0.5
    monkeypatch.setenv("PEAGLE_TARGET", "somewhere")
    assert settings.target_name() == "somewhere"


def test_the_scanner_can_fail() -> None:
    src = (
        "import os\nfrom os import environ\n"
        "a = os.environ.get('PEAGLE_A')\nb = os.environ['PEAGLE_B']\nc = os.getenv('PEAGLE_C')\n"
        "d = 'PEAGLE_D' in os.environ\nos.environ['PEAGLE_E'] = '1'\ne = environ.get('HOME')\n"
    )
    assert env_reads(src) == ["PEAGLE_A", "PEAGLE_B", "PEAGLE_C", "PEAGLE_D"]
    via_constant = (
        "import os\nENV = 'PEAGLE_K'\n"
        "def f(env=None):\n    return (os.environ if env is None else env).get(ENV)\n"
    )
    assert env_reads(via_constant) == ["PEAGLE_K"]
    assert settings_names_used('x = get("PEAGLE_X") or env_flag("PEAGLE_Y")') == [
        "PEAGLE_X",
        "PEAGLE_Y",
    ]
