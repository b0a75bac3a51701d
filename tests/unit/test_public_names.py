"""The public SDK names stay what they are, whatever else has been imported.

A submodule named like a public function would rebind the package attribute the first
time it is imported (`sm_peagle.plan` once returned the function on first access and the
module on the second). So: import every submodule of `sm_peagle`, then read each public
name twice and check it is the same object both times, and that `plan` and `deploy` are
functions. Runs in a fresh interpreter: importing everything (locust's gevent patching
among it) must not leak into the rest of the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Modules that need optional dependencies this venv does not have, with the reason.
OPTIONAL = {
    "peagle_sandbox.vllm_engine": "runs inside the real engine's own venv (torch, vllm)",
}

PUBLIC = [
    "deploy",
    "plan",
    "status",
    "ls",
    "logs",
    "delete",
    "gc",
    "update",
    "apply",
    "diff",
    "adopt",
    "Endpoint",
    "Plan",
    "DeploymentSpec",
    "load_spec",
    "spec_from_options",
    "PeagleError",
    "SpecError",
    "CheckFailed",
    "PreflightFailed",
    "QuotaExceeded",
    "DeploymentFailed",
    "DeploymentTimeout",
    "NotFound",
    "NoCredentials",
]

SCRIPT = """
import importlib, inspect, json, pkgutil, sys
import sm_peagle

optional = {optional!r}
public = {public!r}
imported, skipped = [], []
for info in pkgutil.walk_packages(sm_peagle.__path__, "sm_peagle."):
    name = info.name
    if any(name == p or name.startswith(p + ".") for p in optional):
        skipped.append(name)
        continue
    importlib.import_module(name)
    imported.append(name)
    # Read the public names after every import, too: a rebinding shows at once.
    for attr in ("plan", "deploy"):
        if not inspect.isfunction(getattr(sm_peagle, attr)):
            print(json.dumps({{"rebound": [attr, name]}}))
            sys.exit(1)
report = {{"imported": imported, "skipped": skipped, "names": {{}}}}
for attr in public:
    first, second = getattr(sm_peagle, attr), getattr(sm_peagle, attr)
    report["names"][attr] = {{
        "same": first is second,
        "kind": "function" if inspect.isfunction(first)
        else "class" if inspect.isclass(first)
        else "module" if inspect.ismodule(first)
        else type(first).__name__,
        "in_all": attr in sm_peagle.__all__,
    }}
print(json.dumps(report))
"""


def test_every_public_name_is_stable_after_importing_every_submodule() -> None:
    code = SCRIPT.format(optional=sorted(OPTIONAL), public=PUBLIC)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(report["imported"]) > 60, report["imported"]
    for name in ("sm_peagle.planning.build", "sm_peagle.lifecycle.manager"):
        assert name in report["imported"]
    names = report["names"]
    assert {n for n, r in names.items() if not r["same"]} == set()
    assert {n for n, r in names.items() if not r["in_all"]} == set()
    assert names["plan"]["kind"] == names["deploy"]["kind"] == "function"
    for fn in ("status", "ls", "logs", "delete", "gc", "update", "apply", "diff", "adopt"):
        assert names[fn]["kind"] == "function", fn
    assert {n for n, r in names.items() if r["kind"] == "module"} == set()
    for cls in ("Endpoint", "Plan", "DeploymentSpec", "PeagleError", "NotFound"):
        assert names[cls]["kind"] == "class", cls


def test_no_submodule_is_named_like_a_public_function() -> None:
    pkg = ROOT / "sm_peagle"
    for name in ("plan", "deploy", "use_sandbox", "status", "ls", "update", "apply", "diff"):
        assert not (pkg / f"{name}.py").exists(), name
        assert not (pkg / name).is_dir(), name
