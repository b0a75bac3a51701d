"""The SIMULATED engine's step-time factor: `step_time_factor`, formerly `time_scale`
(issue 36: `--time-scale` read like the sandbox clock's rate). The old key of
PEAGLE_SIMULATED_ENGINE still works for one release; giving both is refused."""

from __future__ import annotations

import pytest

from peagle_sandbox.engine import (
    CONSTANTS,
    ENGINE_ENV,
    Speculation,
    constants_from_env,
    simulate,
)


def test_the_factor_scales_every_step_time() -> None:
    doubled = constants_from_env({ENGINE_ENV: '{"step_time_factor": 2}'})
    assert doubled.step_time_factor == 2.0
    spec = Speculation("p-eagle", 3)
    one = simulate("hello", 12, 16, spec, constants=CONSTANTS)
    two = simulate("hello", 12, 16, spec, constants=doubled)
    assert [s.seconds * 2 for s in one.steps] == pytest.approx([s.seconds for s in two.steps])


def test_the_old_key_sets_the_factor() -> None:
    old = constants_from_env({ENGINE_ENV: '{"time_scale": 0.5}'})
    assert old.step_time_factor == 0.5
    assert old.time_scale == 0.5  # the old attribute reads the same number
    assert "time_scale" not in old.to_dict()  # GET /_peagle/engine shows the new name


def test_both_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="step_time_factor only"):
        constants_from_env({ENGINE_ENV: '{"time_scale": 0.5, "step_time_factor": 2}'})
