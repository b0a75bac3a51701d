"""One settings module: only `sm_peagle/settings.py` reads a `PEAGLE_*` variable, every
variable read anywhere (product or sandbox) is declared there, and the README lists them all.
"""

from __future__ import annotations

import ast
import re
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


def env_reads(source: str) -> list[str]:
    """PEAGLE_* names read from the environment: environ.get("X"), environ["X"] (load),
    os.getenv("X"), "X" in environ."""
    out = []
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "get" and _environ(f.value)) or (
                isinstance(f, ast.Attribute | ast.Name)
                and getattr(f, "attr", getattr(f, "id", None)) == "getenv"
            ):
                name = node.args[0].value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _environ(node.value)
            and isinstance(node.slice, ast.Constant)
        ):
            name = node.slice.value
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(_environ(c) for c in node.comparators)
        ):
            name = node.left.value
        if isinstance(name, str) and name.startswith("PEAGLE_"):
            out.append(name)
    return out


def settings_names_used(source: str) -> list[str]:
    """PEAGLE_* names passed to settings.get("X") / get("X") / env_flag("X")."""
    return re.findall(r"\b(?:get|env_flag)\(\s*\"(PEAGLE_[A-Z_]+)\"", source)


def _files() -> list[Path]:
    return [p for root in SOURCES for p in sorted(root.rglob("*.py"))]


def test_only_settings_reads_peagle_variables() -> None:
    bad = {
        str(p.relative_to(ROOT)): names
        for p in _files()
        if p != SETTINGS and (names := env_reads(p.read_text()))
    }
    assert bad == {}


def test_every_variable_used_is_declared() -> None:
    used = {n for p in _files() for n in settings_names_used(p.read_text())}
    undeclared = {n for n in used if n not in settings.VARIABLES}
    assert not {n for n in undeclared if not n.startswith("PEAGLE_LOCUST_")}, undeclared


def test_the_readme_lists_every_variable() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [n for n in settings.VARIABLES if f"`{n}`" not in readme]
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
    monkeypatch.setenv("PEAGLE_SANDBOX", "yes")
    assert settings.sandbox_requested()


def test_the_scanner_can_fail() -> None:
    src = (
        "import os\nfrom os import environ\n"
        "a = os.environ.get('PEAGLE_A')\nb = os.environ['PEAGLE_B']\nc = os.getenv('PEAGLE_C')\n"
        "d = 'PEAGLE_D' in os.environ\nos.environ['PEAGLE_E'] = '1'\ne = environ.get('HOME')\n"
    )
    assert env_reads(src) == ["PEAGLE_A", "PEAGLE_B", "PEAGLE_C", "PEAGLE_D"]
    assert settings_names_used('x = get("PEAGLE_X") or env_flag("PEAGLE_Y")') == [
        "PEAGLE_X", "PEAGLE_Y"
    ]
