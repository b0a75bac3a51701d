"""The `sagemaker` extra (sagemaker-core) for the bridge and export tests.

CI installs it (.ci/run), so there a missing package is a failure; locally the tests that
need it skip and say how to install it."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

INSTALL = "pip install -e '.[sagemaker]'"


def require_sagemaker_core() -> ModuleType:
    """`sagemaker.core.resources`, or fail (CI) / skip (elsewhere)."""
    try:
        return importlib.import_module("sagemaker.core.resources")
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the sagemaker extra, yet sagemaker.core is missing: {exc}")
        pytest.skip(f"needs the sagemaker extra: {INSTALL}")


@pytest.fixture
def sagemaker_core(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The resource classes, with the SDK's defaults files pointed at empty ones: a
    developer's ~/.config/sagemaker/config.yaml must not add arguments in a test."""
    resources = require_sagemaker_core()
    empty = tmp_path / "sagemaker-config.yaml"
    empty.write_text("{}\n")
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(empty))
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(empty))
    return resources
