"""Deprecated path of ``peagle_sandbox.testing.pytest_plugin``: loads it, with a notice.

``pytest_plugins = ["sm_peagle.testing.pytest_plugin"]`` keeps working for one release; the
fixtures are the sandbox's own (copied into this module, where pytest looks for them)."""

from __future__ import annotations

from ..plugins import moved_module

_new = moved_module(__name__)
globals().update({k: v for k, v in vars(_new).items() if not k.startswith("__")})
