"""The training image a `drafter train` job runs in: AWS's vLLM SageMaker DLC.

The job needs vLLM (the target's continuations, and the `extract_hidden_states`
speculative method that writes the hidden states speculators trains on) and
`speculators` 0.9.0 (the trainer). No AWS training image carries both. The vLLM DLC
`vllm:0.31.0-gpu-py312-cu130-ubuntu24.04-sagemaker` (peagle's published-image table,
`catalog/data/published_images.json`) carries vLLM 0.31.0, which pins torch 2.13.0 and
transformers >=5.10.4,<5.18: inside speculators 0.9.0's ranges (torch >=2.9,<=2.14.1,
transformers >=5.0,<=5.19, its wheel's metadata). So the job pip-installs only speculators
on top, held to what vLLM pins by `source/constraints.txt`: pip can never replace the
image's torch. It is also the vLLM the sandbox's real engine runs, where the GPU
backend's configuration was read.

UNVERIFIED: that pip resolution and the hidden-states extraction were read from the
packages' metadata and source, never run in this image on a GPU.

The image has no SageMaker training toolkit: the request starts the job with
`AlgorithmSpecification.ContainerEntrypoint` (`training/request.py`). `image=` overrides
the image (any image with python3, pip and vLLM >= 0.22 for the `peagle` speculators type).
The account and the `.cn` suffix are the deploy's (`planning/steps/image_choice.py`).
"""

from __future__ import annotations

from ..catalog.images import classic_image
from ..planning.steps.image_choice import DLC_ACCOUNT

__all__ = ["TRAINING_VLLM", "training_image"]

# The vLLM whose SageMaker DLC runs training jobs (its pins: see the module doc).
TRAINING_VLLM = "0.31.0"


def training_image(region: str, image: str | None = None) -> str:
    """The image URI of a training job in `region`: `image` when given, else the vLLM DLC."""
    if image:
        return image
    row = classic_image(TRAINING_VLLM)
    if row is None:  # the table is packaged data: a build without the row is a bug
        raise RuntimeError(f"no published vLLM {TRAINING_VLLM} image in peagle's table")
    suffix = ".cn" if region.startswith("cn-") else ""
    return f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com{suffix}/vllm:{row.tag}"
