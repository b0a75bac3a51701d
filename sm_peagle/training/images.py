"""The training image a `drafter train` job runs in: an AWS Deep Learning Container.

The job runs stock `speculators` 0.9.0 in script mode (the SageMaker training toolkit
pip-installs `requirements.txt` from the uploaded source dir, then runs
`peagle_train.py`). speculators 0.9.0 requires torch >=2.9.0,<=2.14.1 and transformers
5.x (its wheel's metadata), so the image must carry both: AWS's Hugging Face PyTorch
training DLC `2.9.0-transformers5.3.0-gpu-py312-cu130-ubuntu22.04` does (torch 2.9.0,
transformers 5.3.0, built for SageMaker; release tag
`v1.0-hf-5.3.0-pt-2.9.0-tr-gpu-py312` of aws/deep-learning-containers, listed on AWS's
"available Deep Learning Containers images" page). The plain `pytorch-training` DLC has
transformers 4.x, which speculators 0.9.0 cannot import. `image=` overrides it (e.g. an
image built from `containers/trainer/Dockerfile`, or a newer DLC).

The DLC account is 763104351884 in the commercial regions peagle deploys to (the same
account as the vLLM DLCs, `planning/steps/image_choice.DLC_ACCOUNT`).
"""

from __future__ import annotations

__all__ = ["DLC_ACCOUNT", "TRAINING_IMAGE_REPOSITORY", "TRAINING_IMAGE_TAG", "training_image"]

DLC_ACCOUNT = "763104351884"
TRAINING_IMAGE_REPOSITORY = "huggingface-pytorch-training"
TRAINING_IMAGE_TAG = "2.9.0-transformers5.3.0-gpu-py312-cu130-ubuntu22.04"
SOURCE = (
    "aws/deep-learning-containers release v1.0-hf-5.3.0-pt-2.9.0-tr-gpu-py312 "
    "(torch 2.9.0, transformers 5.3.0: inside speculators 0.9.0's torch 2.9-2.14.1)"
)


def training_image(region: str, image: str | None = None) -> str:
    """The image URI of a training job in `region`: `image` when given, else the DLC."""
    if image:
        return image
    return (
        f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com/"
        f"{TRAINING_IMAGE_REPOSITORY}:{TRAINING_IMAGE_TAG}"
    )
