"""The layout rules the README's architecture section promises, checked on the source.

Seams over caps: a module holds one seam, and the seams split before a module passes 600
lines. No module of the product (`sm_peagle/`) or the emulator (`sandbox/peagle_sandbox/`)
is longer unless it is listed in LONG_MODULES with the reason, and the architecture page
(docs/contributing.md, "Architecture") names it and gives the same reason. No module
reaches into another's privates: a `_name` is imported only inside its own module's
package, and `obj._name` is used only where `_name` is defined. Also: no function in
`planning/` or `lifecycle/` over 80 lines, and at most MAX_ROOT_MODULES modules at the
package root (the rest lives in packages that say what they may touch)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "sm_peagle"
SANDBOX = REPO / "sandbox" / "peagle_sandbox"
ARCHITECTURE_PAGE = REPO / "docs" / "contributing.md"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_import_graph import _raw_imports, module_name, package_of  # noqa: E402

# Past 600 lines a module holds two things (issue 35 split the five that did): it splits,
# or LONG_MODULES says why it does not.
MAX_FILE_LINES = 600
# Modules allowed past MAX_FILE_LINES: repo-relative path -> why one seam needs the length.
# The architecture page names each path and gives the same reason; an entry whose module
# is back under the limit fails (remove it then). None today.
LONG_MODULES: dict[str, str] = {}
MAX_FUNCTION_LINES = 80
# checks.py (the Check result type, below planning, drafter, vllm and lifecycle) is the 9th;
# client.py (`sm_peagle.Client`, the SDK's one object, issue 34) the 10th: users import it
# by that name, next to endpoint.py (the handle) and errors.py. wording.py (Param, Call,
# Phrase, Text: issue 35 split it out of errors.py, which re-exports it) is the 11th: it
# sits in the bottom layer with errors, where no package does. contract.py is the 12th:
# issue 35 asks for the plugin contract as one public module of sm_peagle (it sits at the
# top of the layers, the plugins' facade), next to plugins.py, the host that asks them.
MAX_ROOT_MODULES = 12

# Private reach-ins allowed for now, each with the reason: (module, "<where>.<_name>").
# Remove an entry when its reach-in goes.
ALLOWED_PRIVATE_REACH: dict[tuple[str, str], str] = {
    ("sm_peagle.ops.deployment", "session._connect"): "deploy, apply and diff connect through "
    "a copy of the client set to the plan's region (a client without a region deploys where "
    "the spec says); Session._connect takes no region",
}


def long_files(root: Path, limit: int, base: Path | None = None) -> dict[str, int]:
    """{path relative to `base` (default: root's parent): lines} of each module over
    `limit` lines."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text().splitlines())
        if n > limit:
            out[path.relative_to(base or root.parent).as_posix()] = n
    return out


def architecture_section(page: str) -> str:
    """The "## Architecture" section of the contributing page, up to the next section."""
    start = page.index("\n## Architecture\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


def unexplained_long_modules(
    found: dict[str, int], allowed: dict[str, str], page: str
) -> dict[str, str]:
    """{path: what is missing} for each module over the limit that the page does not
    explain: no LONG_MODULES entry, or an entry whose path or reason the architecture
    section does not carry (its prose is wrapped, so whitespace is compared loosely)."""
    section = " ".join(architecture_section(page).split())
    out = {}
    for path in found:
        if path not in allowed:
            out[path] = "no reason in LONG_MODULES"
        elif f"`{path}`" not in section or " ".join(allowed[path].split()) not in section:
            out[path] = "the architecture page does not name it with its reason"
    return out


def long_functions(source: str, limit: int) -> dict[str, int]:
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = node.end_lineno - node.lineno + 1
            if n > limit:
                out[f"{node.name}:{node.lineno}"] = n
    return out


def _defined(tree: ast.Module) -> set[str]:
    """Every name a module binds anywhere: functions, classes, assignments, attributes
    set on anything, arguments."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reach(sources: dict[str, tuple[str, bool]]) -> dict[tuple[str, str], str]:
    """(module, what it reaches) -> 'across packages' | 'within a package', for every
    `from m import _name` of another module's private name, and every `obj._name` on
    something other than self/cls where the module defines no `_name` itself."""
    known = set(sources)
    out: dict[tuple[str, str], str] = {}
    for m, (text, is_pkg) in sources.items():
        tree = ast.parse(text)
        for target, name in _raw_imports(tree, m, is_pkg):
            if name is None or not _private(name) or f"{target}.{name}" in known:
                continue  # a public name, or a private *module* (sm_peagle._lazy)
            if target == m:
                continue
            where = "across packages" if package_of(target) != package_of(m) else "within"
            out[(m, f"{target}.{name}")] = where
        own = _defined(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
                base = ast.unparse(node.value)
                if base not in ("self", "cls", "super()"):
                    out[(m, f"{base}.{node.attr}")] = "within"
    return out


def _sources(root: Path) -> dict[str, tuple[str, bool]]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        name, is_pkg = module_name(path, root)
        out[name] = (path.read_text(), is_pkg)
    return out


def _long_modules() -> dict[str, int]:
    return long_files(PKG, MAX_FILE_LINES, REPO) | long_files(SANDBOX, MAX_FILE_LINES, REPO)


def test_no_module_over_600_lines_without_a_reason_on_the_architecture_page() -> None:
    assert (SANDBOX / "__init__.py").exists()  # the emulator's tree is where it was
    page = ARCHITECTURE_PAGE.read_text()
    assert unexplained_long_modules(_long_modules(), LONG_MODULES, page) == {}


def test_every_long_module_listed_is_still_long() -> None:
    # An entry outliving its module's length would let the module grow back unexplained.
    assert set(LONG_MODULES) - set(_long_modules()) == set()


def test_no_module_imports_another_packages_private_names() -> None:
    found = private_reach(_sources(PKG))
    across = {k: v for k, v in found.items() if v == "across packages"}
    assert {k for k in across if k not in ALLOWED_PRIVATE_REACH} == set()


def test_no_module_reaches_into_another_modules_privates() -> None:
    found = private_reach(_sources(PKG))
    assert {k for k in found if k not in ALLOWED_PRIVATE_REACH} == set()


def test_the_sandbox_imports_no_private_names() -> None:
    """The emulator (sandbox/peagle_sandbox) too: no module imports another's private
    names (it does read moto's privates through attributes: patching moto is its job)."""
    sandbox = PKG.parent / "sandbox" / "peagle_sandbox"
    sources = _sources(sandbox)
    imported = {
        (m, what) for (m, what) in private_reach(sources) if what.rpartition(".")[0] in sources
    }
    assert imported == set()


def test_no_function_over_80_lines_in_planning_or_lifecycle() -> None:
    bad = {}
    for sub in ("planning", "lifecycle"):
        assert (PKG / sub / "__init__.py").exists(), sub
        for path in sorted((PKG / sub).rglob("*.py")):
            for fn, n in long_functions(path.read_text(), MAX_FUNCTION_LINES).items():
                bad[f"{path.relative_to(PKG.parent)}:{fn}"] = n
    assert bad == {}


def test_package_root_holds_at_most_max_root_modules() -> None:
    root = sorted(p.name for p in PKG.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_the_limits_can_fail(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "big.py").write_text("x = 1\n" * 601)
    (tmp_path / "pkg" / "at.py").write_text("x = 1\n" * 600)  # at the limit: fine
    found = long_files(tmp_path / "pkg", MAX_FILE_LINES)
    assert found == {"pkg/sub/big.py": 601}
    reason = "one table that reads as one"
    page = f"# C\n\n## Architecture\n\n`pkg/sub/big.py` is long: {reason}.\n\n## Next\n"
    assert unexplained_long_modules(found, {}, page) == {
        "pkg/sub/big.py": "no reason in LONG_MODULES"
    }
    missing = {"pkg/sub/big.py": "the architecture page does not name it with its reason"}
    assert unexplained_long_modules(found, {"pkg/sub/big.py": "another reason"}, page) == missing
    elsewhere = page.replace("## Architecture", "## Elsewhere").replace(
        "## Next", "## Architecture"
    )
    assert unexplained_long_modules(found, {"pkg/sub/big.py": reason}, elsewhere) == missing
    assert unexplained_long_modules(found, {"pkg/sub/big.py": reason}, page) == {}
    body = "".join(f"    y{i} = {i}\n" for i in range(80))
    assert long_functions(f"def f():\n{body}", MAX_FUNCTION_LINES) == {"f:1": 81}
    assert long_functions(f"def f():\n{body[: body.rindex('    y79')]}", 80) == {}


def test_the_private_rule_can_fail() -> None:
    sources = {
        "sm_peagle": ("", True),
        "sm_peagle._lazy": ("def lazy_getattr(): ...\n", False),
        "sm_peagle.a": ("", True),
        "sm_peagle.a.x": (
            "from ._y import z\nclass L:\n    def _own(self): self._p()\ndef _helper(): ...\n",
            False,
        ),
        "sm_peagle.a._y": ("z = 1\n", False),
        "sm_peagle.a.w": (
            "from .x import _helper\nfrom .x import L\n"
            "def go(lc: L):\n    lc._own()\n    _helper()\n",
            False,
        ),
        "sm_peagle.b": (
            "from . import _lazy\nfrom sm_peagle._lazy import lazy_getattr\n"
            "from .a.x import _helper\n",
            False,
        ),
    }
    assert private_reach(sources) == {
        ("sm_peagle.a.w", "sm_peagle.a.x._helper"): "within",
        ("sm_peagle.a.w", "lc._own"): "within",
        ("sm_peagle.b", "sm_peagle.a.x._helper"): "across packages",
    }
