"""The size limits the README's architecture section promises, checked on the source:
no module in `sm_peagle/` over 400 lines, no function in `planning/` or `lifecycle/` over
80 lines, and at most 8 modules at the package root (the rest lives in packages that
say what they may touch)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "sm_peagle"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80
MAX_ROOT_MODULES = 8


def long_files(root: Path, limit: int) -> dict[str, int]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text().splitlines())
        if n > limit:
            out[str(path.relative_to(root.parent))] = n
    return out


def long_functions(source: str, limit: int) -> dict[str, int]:
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = node.end_lineno - node.lineno + 1
            if n > limit:
                out[f"{node.name}:{node.lineno}"] = n
    return out


def test_no_module_over_400_lines() -> None:
    assert long_files(PKG, MAX_FILE_LINES) == {}


def test_no_function_over_80_lines_in_planning_or_lifecycle() -> None:
    bad = {}
    for sub in ("planning", "lifecycle"):
        assert (PKG / sub / "__init__.py").exists(), sub
        for path in sorted((PKG / sub).rglob("*.py")):
            for fn, n in long_functions(path.read_text(), MAX_FUNCTION_LINES).items():
                bad[f"{path.relative_to(PKG.parent)}:{fn}"] = n
    assert bad == {}


def test_package_root_holds_at_most_8_modules() -> None:
    root = sorted(p.name for p in PKG.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_the_limits_can_fail(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * 401)
    assert long_files(tmp_path / "pkg", MAX_FILE_LINES) == {"pkg/big.py": 401}
    body = "".join(f"    y{i} = {i}\n" for i in range(80))
    assert long_functions(f"def f():\n{body}", MAX_FUNCTION_LINES) == {"f:1": 81}
    assert long_functions(f"def f():\n{body[: body.rindex('    y79')]}", 80) == {}
