"""Deprecated path of ``peagle_sandbox.testing.moto_sagemaker`` (``SageMakerHarness``)."""

from __future__ import annotations

from ..plugins import moved_module

_new = moved_module(__name__)
globals().update({k: v for k, v in vars(_new).items() if not k.startswith("__")})
