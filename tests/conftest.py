"""Root conftest: the moto harness fixtures, and an isolated peagle cache per test run."""

import pytest

pytest_plugins = ["sm_peagle.testing.pytest_plugin"]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # Never read or write the user's ~/.cache/peagle from tests (JumpStart specs, shapes).
    monkeypatch.setenv("PEAGLE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "peagle-cache"))
    monkeypatch.delenv("PEAGLE_ROLE_ARN", raising=False)
