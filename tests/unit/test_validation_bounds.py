"""The bounds every traffic and measurement argument is held to before anything is sent,
each written from its rule, not from the code:

- temperature: vLLM's SamplingParams._verify_args (vllm/sampling_params.py, 0.31.0, the
  engine the conformance tier runs) refuses a non-finite value, a negative one and one
  above 2 ("temperature must be in [0, 2]"), as OpenAI documents 0..2;
- top_p: the same function refuses anything outside (0, 1];
- max_tokens: vLLM refuses fewer than 1;
- requests per level: 1 to 100,000, the bound `peagle bench --help` documents;
- the default deploy wait (lifecycle/waiter.py default_timeout): the variant's
  ModelDataDownloadTimeoutInSeconds + ContainerStartupHealthCheckTimeoutInSeconds (each
  60..3600 s in SageMaker's API reference; absent, the 3600 s maximum) + a 15-minute
  margin for provisioning.
"""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from sm_peagle.errors import SpecError
from sm_peagle.lifecycle.waiter import default_timeout
from sm_peagle.ops.measure_checks import check_requests
from sm_peagle.runtime.payloads import (
    build_payload,
    check_max_tokens,
    check_temperature,
    check_top_p,
)

TEMPERATURE_OK = [0, 0.0, 0.01, 0.7, 1, 1.999, 2, 2.0]
TEMPERATURE_BAD = [-0.001, -1, 2.0001, 3, 100, math.nan, math.inf, -math.inf, True, "0.7"]
TOP_P_OK = [1e-9, 0.1, 0.9, 1, 1.0]
TOP_P_BAD = [0, 0.0, -0.5, 1.0001, 2, math.nan, math.inf, False, "0.9"]


@pytest.mark.parametrize("value", TEMPERATURE_OK)
def test_a_temperature_from_0_to_2_is_accepted(value: float) -> None:
    assert check_temperature(value) == float(value)


@pytest.mark.parametrize("value", TEMPERATURE_BAD)
def test_a_temperature_outside_0_to_2_is_refused_with_a_fix(value: object) -> None:
    with pytest.raises(SpecError) as e:
        check_temperature(value)
    # The SDK's words name the keyword (the CLI prints --temperature: tests/e2e parity).
    assert e.value.exit_code == 2 and "temperature=" in e.value.message
    assert (e.value.field, e.value.value) == ("temperature", value)
    assert e.value.remedy and "2" in e.value.remedy


@pytest.mark.parametrize("value", TOP_P_OK)
def test_a_top_p_above_0_and_at_most_1_is_accepted(value: float) -> None:
    assert check_top_p(value) == float(value)


@pytest.mark.parametrize("value", TOP_P_BAD)
def test_a_top_p_outside_0_to_1_is_refused_with_a_fix(value: object) -> None:
    with pytest.raises(SpecError) as e:
        check_top_p(value)
    assert e.value.exit_code == 2 and "top_p=" in e.value.message and e.value.remedy
    assert (e.value.field, e.value.value) == ("top_p", value)


def test_none_means_the_model_default_for_both() -> None:
    assert check_temperature(None) is None and check_top_p(None) is None


@pytest.mark.parametrize(("value", "ok"), [(1, True), (256, True), (0, False), (-1, False)])
def test_max_tokens_must_be_at_least_one(value: int, ok: bool) -> None:
    if ok:
        assert check_max_tokens(value) == value
    else:
        with pytest.raises(SpecError, match="at least 1"):
            check_max_tokens(value)


def test_the_sdk_payload_builder_holds_top_p_to_the_same_rule() -> None:
    """`Endpoint.invoke(..., top_p=...)` passes top_p through build_payload."""
    assert build_payload("Hi", top_p=1.0)["top_p"] == 1.0
    for bad in (0, 1.5):
        with pytest.raises(SpecError, match="top_p"):
            build_payload("Hi", top_p=bad)
    with pytest.raises(SpecError, match="temperature"):
        build_payload("Hi", temperature=2.5)


@pytest.mark.parametrize(("n", "ok"), [(1, True), (100_000, True), (0, False), (100_001, False)])
def test_requests_per_level_run_from_1_to_100000(n: int, ok: bool) -> None:
    if ok:
        assert check_requests(n) == n
    else:
        with pytest.raises(SpecError) as e:
            check_requests(n)
        assert e.value.remedy


def test_bench_help_documents_the_requests_bound() -> None:
    from sm_peagle.cli.app import app

    out = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "200"}).output
    assert "1 to 100,000" in " ".join(out.split())


MARGIN = 15 * 60  # the docstring's margin for provisioning


@pytest.mark.parametrize(
    ("download", "startup"), [(60, 60), (1200, 600), (600, 1200), (3600, 3600), (900, 2400)]
)
def test_the_default_wait_is_both_windows_plus_15_minutes(download: int, startup: int) -> None:
    config = {
        "ProductionVariants": [
            {
                "VariantName": "AllTraffic",
                "ModelDataDownloadTimeoutInSeconds": download,
                "ContainerStartupHealthCheckTimeoutInSeconds": startup,
            }
        ]
    }
    assert default_timeout(config) == download + startup + MARGIN


def test_a_variant_without_windows_waits_for_their_maximum_plus_the_margin() -> None:
    # SageMaker's API reference: each window is at most 3600 s.
    assert default_timeout({"ProductionVariants": [{"VariantName": "v"}]}) == 3600 + 3600 + MARGIN
