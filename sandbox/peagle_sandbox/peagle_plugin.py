"""The sandbox as a peagle plugin: what it contributes, through `sm_peagle.contract`.

peagle loads `PLUGIN` through the `sm_peagle.plugins` entry point and never names this
package. This module holds declarations only (it is imported by `peagle --help`): the
command group, the sandbox-only models, the `--sandbox` target, the result labels, the
settings, a doctor check and the moved import paths. The work is imported when asked for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sm_peagle.contract import (
    AwsTarget,
    CommandGroup,
    DoctorCheck,
    PluginBase,
    ResultLabel,
    Setting,
    TargetOption,
    TargetState,
    Wording,
)

__all__ = ["PLUGIN", "SandboxPlugin", "SandboxTarget", "label_for_engine", "sandbox_vllm"]

NAME = "sandbox"
DEFAULT_ENGINE = "simulated"

# -- labels: what produced a result's numbers -------------------------------------------
SANDBOX_SIMULATED = "SANDBOX (SIMULATED)"
_REAL_ENGINE = re.compile(r"vllm (?P<version>[0-9][^\s()]*) \(CPU, tiny model\)")


def sandbox_vllm(version: str) -> str:
    """The label of the sandbox's real vLLM engine of `version`."""
    return f"SANDBOX (vllm {version}, CPU, tiny model)"


def label_for_engine(engine: str | None) -> str:
    """The label for a sandbox whose engine label is `engine` ("SIMULATED", or the real
    engine's "vllm X.Y.Z (CPU, tiny model)"). Anything else is SIMULATED: the sandbox never
    serves real tokens without saying which vLLM produced them."""
    m = _REAL_ENGINE.fullmatch((engine or "").strip())
    return sandbox_vllm(m.group("version")) if m else SANDBOX_SIMULATED


LABELS = (
    ResultLabel(
        SANDBOX_SIMULATED,
        simulated=True,
        caveat="SIMULATED: the local peagle sandbox made these tokens and timings up "
        "(peagle_sandbox.engine); they say nothing about real GPU performance",
    ),
    ResultLabel(
        sandbox_vllm("*"),
        simulated=False,
        caveat="SANDBOX, real engine: tokens, usage and acceptance come from real vLLM on "
        "this CPU with a tiny model; timings say nothing about a GPU",
    ),
)


class SandboxTarget:
    """`peagle --sandbox …`: the local sandbox instead of AWS (started on demand)."""

    name = NAME
    options: Sequence[TargetOption] = (
        TargetOption(
            "--sandbox",
            "Run against a local SageMaker sandbox (started on demand; also "
            "PEAGLE_SANDBOX=1). See `peagle sandbox --help`.",
            setting="PEAGLE_SANDBOX",
        ),
        TargetOption(
            "--sandbox-engine",
            "The sandbox's engine: simulated (default) or vllm, the real vLLM CPU engine "
            "(also PEAGLE_SANDBOX_ENGINE). Implies --sandbox.",
            setting="PEAGLE_SANDBOX_ENGINE",
            metavar="ENGINE",
        ),
    )
    offer = Wording(
        cli="--sandbox", python="a client for the local sandbox (peagle_sandbox.client())"
    )
    run = Wording(cli="peagle --sandbox", python="`peagle_sandbox.client()`")

    def activate(self, values: Mapping[str, str | bool]) -> TargetState:
        """Start the sandbox if needed and point this process at it (`peagle --sandbox`)."""
        import os

        engine = values.get("--sandbox-engine")
        if isinstance(engine, str):  # read by the sandbox manager from here on
            os.environ["PEAGLE_SANDBOX_ENGINE"] = engine
        from .sdk import cli_activate

        cli_activate()
        state = self.current()
        assert state is not None  # activate() just pointed this process at it
        return state

    def current(self) -> TargetState | None:
        from . import settings

        url = settings.get("PEAGLE_SANDBOX_URL")
        if not url:
            return None
        engine_label = settings.get("PEAGLE_SANDBOX_ENGINE_LABEL") or "SIMULATED"
        carry: tuple[str, ...] = ("--sandbox",)
        engine = (settings.get("PEAGLE_SANDBOX_ENGINE") or "").strip().lower()
        if engine and engine != DEFAULT_ENGINE:
            carry += ("--sandbox-engine", engine)
        return TargetState(
            name=NAME,
            url=url,
            label=label_for_engine(engine_label),
            engine=engine_label,
            carry=carry,
            extra=_settings_of(url),
            unreachable=Wording(
                cli="`peagle sandbox status`, or restart it", python="peagle_sandbox.status()"
            ),
        )

    def schedule_error(self, url: str, schedule: str) -> str | None:
        """The contract's optional hook: the last failed run of `schedule` ("group/name")
        the sandbox at `url` ran (its GET /_peagle/schedules, moto_scheduler.py), or None
        when `url` is not a local sandbox."""
        import json
        import urllib.request

        if not url.startswith(("http://127.0.0.1", "http://localhost")):
            return None
        with urllib.request.urlopen(url.rstrip("/") + "/_peagle/schedules", timeout=5) as r:
            doc = json.loads(r.read())
        runs = doc.get("runs", []) if isinstance(doc, dict) else doc
        failed = [
            r for r in runs
            if isinstance(r, dict) and r.get("schedule") == schedule and r.get("error")
        ]  # fmt: skip
        return str(failed[-1]["error"]) if failed else None


# What a result produced on the sandbox records of how it ran (its record's extra fields):
# the SIMULATED engine's step times scale with step_time_factor (the state file also says
# time_scale, its old name, for a release: not recorded twice), and the control plane's
# waits with creating_seconds and the clock rate, so two results are comparable only when
# these agree.
_RECORDED = (
    "started_at",
    "creating_seconds",
    "metrics_interval",
    "step_time_factor",
    "clock_rate",
)


def _settings_of(url: str) -> dict[str, Any]:
    """The recorded settings of the sandbox at `url`, from its state file (a file read;
    nothing when the state file names another sandbox or none)."""
    import json

    from .settings import state_dir

    try:
        state = json.loads((state_dir() / "sandbox.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(state, dict) or state.get("url") != url:
        return {}
    return {k: state[k] for k in _RECORDED if state.get(k) is not None}


class SandboxPlugin(PluginBase):
    name = NAME
    distribution = "peagle-sandbox"

    def commands(self) -> Sequence[CommandGroup]:
        return (
            CommandGroup(
                NAME,
                "A local SageMaker on 127.0.0.1 with a SIMULATED or real vLLM CPU engine "
                "(the peagle-sandbox distribution): start, status, stop, clock, install-engine.",
                "peagle_sandbox.cli:sandbox_app",
            ),
        )

    def models(self) -> Sequence[Mapping[str, Any]]:
        from .models import SANDBOX_MODELS

        return SANDBOX_MODELS

    def target(self) -> AwsTarget:
        return _TARGET

    def labels(self) -> Sequence[ResultLabel]:
        return LABELS

    def settings(self) -> Sequence[Setting]:
        from .settings import SETTINGS

        return SETTINGS

    def doctor_checks(self) -> Sequence[DoctorCheck]:
        from .doctor import engine_check

        return (engine_check(),)

    def moved(self) -> Mapping[str, str]:
        return {
            "sm_peagle.use_sandbox": "peagle_sandbox.use_sandbox",
            "sm_peagle.sandbox_start": "peagle_sandbox.start",
            "sm_peagle.sandbox_stop": "peagle_sandbox.stop",
            "sm_peagle.sandbox_status": "peagle_sandbox.status",
            "sm_peagle.testing.pytest_plugin": "peagle_sandbox.testing.pytest_plugin",
            "sm_peagle.testing.moto_sagemaker": "peagle_sandbox.testing.moto_sagemaker",
        }


_TARGET = SandboxTarget()
PLUGIN = SandboxPlugin()
