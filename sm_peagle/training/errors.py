"""The errors of `drafter train`: defined with every other SDK error in `sm_peagle.errors`
(where a user imports them from), named here beside the code that raises them."""

from __future__ import annotations

from ..errors import TrainingFailed, TrainingLost, TrainingStopped

__all__ = ["TrainingFailed", "TrainingLost", "TrainingStopped"]
