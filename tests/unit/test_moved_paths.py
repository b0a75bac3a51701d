"""Names that moved keep working for one release, and the troubleshooting page's table of
error classes (docs/troubleshooting.md, "Every error class") has one row per error class
`sm_peagle` exports, each importable from `sm_peagle` with the exit code the row gives
(CHANGELOG.md lists the moves).

- `sm_peagle.use_sandbox()` -> `peagle_sandbox.use_sandbox()`, and
  `sm_peagle.sandbox_start|status|stop` -> `peagle_sandbox.start|status|stop`: the sandbox
  plugin declares them (`PLUGIN.moved()`), peagle forwards them with a FutureWarning;
- `sm_peagle.testing.pytest_plugin` -> `peagle_sandbox.testing.pytest_plugin`;
- without the sandbox distribution, the old names are gone (peagle names no plugin).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle import errors, plugins

ROOT = Path(__file__).resolve().parents[2]


def troubleshooting_error_rows(text: str) -> dict[str, int]:
    """class name -> exit code, from the rows "| `Name` (N) | …" of the troubleshooting
    page's "Every error class" section (other sections quote SageMaker's and vLLM's)."""
    start = text.index("\n## Every error class")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    return {n: int(c) for n, c in re.findall(r"(?m)^\| `([A-Za-z]+)` \((\d+)\) \|", section)}


def test_every_error_class_has_its_troubleshooting_row_with_its_exit_code() -> None:
    rows = troubleshooting_error_rows((ROOT / "docs" / "troubleshooting.md").read_text())
    exported = {
        n
        for n in sm_peagle.__all__
        if isinstance(v := getattr(sm_peagle, n), type) and issubclass(v, errors.PeagleError)
    }
    # PeagleError, the base class, is named in the section's prose, not in a row.
    assert set(rows) == exported - {"PeagleError"}
    for name, code in sorted(rows.items()):
        cls = getattr(sm_peagle, name)
        assert cls is getattr(errors, name) and issubclass(cls, errors.PeagleError), name
        assert cls.exit_code == code, f"{name} exits {cls.exit_code}, the page says {code}"


def test_every_public_error_class_in_errors_is_exported() -> None:
    classes = {
        n
        for n, v in vars(errors).items()
        if isinstance(v, type) and issubclass(v, errors.PeagleError)
    }
    assert classes <= set(sm_peagle.__all__), classes - set(sm_peagle.__all__)


def test_troubleshooting_row_scan_can_fail() -> None:
    text = (
        "## Output\n| `Quoted` (1) | elsewhere |\n"
        "## Every error class\n| `FooError` (2) | x | y |\n| `BarFailed` (1) | `Baz` |\n"
        "not `QuxError` (1)\n## Next\n| `Later` (1) | z |\n"
    )
    assert troubleshooting_error_rows(text) == {"FooError": 2, "BarFailed": 1}


def test_use_sandbox_at_the_old_path_warns_once_and_calls_the_new_one(monkeypatch) -> None:
    import peagle_sandbox

    calls = []

    def use_sandbox(**options):
        calls.append(options)
        return "info"

    monkeypatch.setattr(peagle_sandbox, "use_sandbox", use_sandbox)
    with pytest.warns(FutureWarning, match=r"sm_peagle.use_sandbox moved to peagle_sandbox"):
        assert sm_peagle.use_sandbox(engine="simulated") == "info"
    assert calls == [{"engine": "simulated"}]


@pytest.mark.parametrize(
    ("old", "new"),
    [("sandbox_start", "start"), ("sandbox_status", "status"), ("sandbox_stop", "stop")],
)
def test_the_sandbox_sdk_at_its_old_names_is_the_sandbox_s_own(old: str, new: str) -> None:
    import peagle_sandbox

    with pytest.warns(FutureWarning, match=rf"sm_peagle.{old} moved to peagle_sandbox.{new}\b"):
        assert getattr(sm_peagle, old) is getattr(peagle_sandbox, new)
    # Old names, not public ones: the reference and `__all__` name the sandbox's.
    assert old not in sm_peagle.__all__


def test_the_real_plugin_is_the_sandbox_distribution() -> None:
    from peagle_sandbox.peagle_plugin import PLUGIN

    assert PLUGIN in plugins.installed()
    dist = metadata.distribution("peagle-sandbox")
    # One entry point, the contract's: the old `sm_peagle.commands` / `sm_peagle.models`
    # groups are folded into the plugin object.
    assert [(ep.group, ep.name, ep.value) for ep in dist.entry_points] == [
        ("sm_peagle.plugins", "sandbox", "peagle_sandbox.peagle_plugin:PLUGIN")
    ]


def test_without_the_sandbox_the_old_names_are_gone(monkeypatch) -> None:
    """peagle does not know where its old names went: the plugin says so. Without it, an
    old name is an AttributeError like any unknown name (and nothing is imported)."""
    monkeypatch.setattr(plugins, "installed", lambda: ())
    for old in ("use_sandbox", "sandbox_start", "sandbox_status", "sandbox_stop"):
        with pytest.raises(AttributeError, match=rf"has no attribute '{old}'"):
            getattr(sm_peagle, old)


def test_old_pytest_plugin_path_loads_the_sandbox_fixtures_with_a_notice() -> None:
    script = (
        "import json, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import sm_peagle.testing.pytest_plugin as old\n"
        "import peagle_sandbox.testing.pytest_plugin as new\n"
        "names = ['aws', 'aws_credentials', 'sagemaker_harness', 'moto_server']\n"
        "print(json.dumps({'same': [getattr(old, n) is getattr(new, n) for n in names],\n"
        "  'warnings': [(c.category.__name__, str(c.message)) for c in w\n"
        "               if 'moved' in str(c.message)]}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["same"] == [True] * 4
    (warning,) = doc["warnings"]
    assert warning[0] == "FutureWarning"
    assert "peagle_sandbox.testing.pytest_plugin" in warning[1]


def test_plan_for_still_plans_with_a_notice() -> None:
    with pytest.warns(FutureWarning, match=r"sm_peagle.plan_for is deprecated, use sm_peagle.plan"):
        old = sm_peagle.plan_for("gpt-oss-20b", k=5)
    new = sm_peagle.plan("gpt-oss-20b", k=5)
    assert old.to_dict() == new.to_dict()
