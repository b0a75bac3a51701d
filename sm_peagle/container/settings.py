"""What the serving container reads from its environment: SageMaker's variables (the
model's `Environment`, set by CreateModel) and the image's own.

The container's counterpart of `sm_peagle/settings.py`: the entrypoint reads its
environment only through `environ()` (tests/unit/test_settings_reads.py holds that). Standard
library only, so `python3 -m sm_peagle.container.entrypoint` loads nothing more than it
did (the product's settings module is not needed inside the image).
"""

from __future__ import annotations

import os

__all__ = ["VARIABLES", "environ"]

# name (or prefix, ending in `_`) -> what the entrypoint does with it.
VARIABLES: dict[str, str] = {
    "SM_VLLM_": "each SM_VLLM_<NAME> becomes `vllm serve --<name>` (the AWS vLLM DLC's rule)",
    "SM_VLLM_MODEL": "the model to serve (else a non-empty /opt/ml/model, else HF_MODEL_ID)",
    "SM_VLLM_PORT": "must be 8080 (SageMaker sends /ping and /invocations there only)",
    "HF_MODEL_ID": "the model when SM_VLLM_MODEL is unset and /opt/ml/model is empty",
    "PEAGLE_VLLM_VERSION": "the image's vLLM version, when `import vllm` cannot say",
    "PEAGLE_OPT_ML_ROOT": "a local stand-in for /opt/ml (a test engine's; never set on AWS)",
}


def environ() -> dict[str, str]:
    """The container's environment as it is now (a copy: the entrypoint reads, never
    writes it)."""
    return dict(os.environ)
