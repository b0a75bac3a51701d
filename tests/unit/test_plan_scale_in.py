"""`ScaleInPolicy` on the managed instance scaling of a component endpoint, in the pure plan.

Expected values come from botocore 1.44's sagemaker model (the shape
`ProductionVariantManagedInstanceScalingScaleInPolicy`: the Strategy enum, the min/max of
MaximumStepSize and CooldownInMinutes), never from the code under test. botocore's own
ParamValidator checks required members, types and minima but no enum and no maximum,
which is why peagle checks those itself (shown below, not assumed).
"""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from sm_peagle.errors import SpecError
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.options import spec_from_options
from tests.plan_helpers import make_offline, run_cli

ROLE = "arn:aws:iam::123456789012:role/peagle"
ONE = ("gpt-oss-20b", "-t", "ml.g7e.2xlarge", "--component", "p-eagle:k=7", "--role", ROLE)


def _model() -> Any:
    return botocore.session.get_session().get_service_model("sagemaker")


def _policy_shape() -> Any:
    return _model().shape_for("ProductionVariantManagedInstanceScalingScaleInPolicy")


def _range(member: str) -> tuple[int, int]:
    meta = _policy_shape().members[member].metadata
    return meta["min"], meta["max"]


def _config_errors(config: dict[str, Any]) -> str:
    shape = _model().operation_model("CreateEndpointConfig").input_shape
    report = ParamValidator().validate(config, shape)
    return report.generate_report() if report.has_errors() else ""


def _plan(**options: Any) -> Any:
    options.setdefault("role", ROLE)
    options.setdefault("instance_type", "ml.g7e.2xlarge")
    options.setdefault("components", ["p-eagle:k=7"])
    return plan(spec_from_options("gpt-oss-20b", **options))


def _scaling(p: Any) -> dict[str, Any]:
    return p.create_endpoint_config["ProductionVariants"][0]["ManagedInstanceScaling"]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    make_offline(monkeypatch, tmp_path)


def test_the_model_declares_what_these_tests_rely_on() -> None:
    shape = _model().shape_for("ProductionVariantManagedInstanceScaling")
    assert "ScaleInPolicy" in shape.members
    policy = _policy_shape()
    assert policy.required_members == ["Strategy"]
    assert set(policy.members) == {"Strategy", "MaximumStepSize", "CooldownInMinutes"}
    assert "Releases instances that have no hosted inference component copies" in (
        policy.members["Strategy"].documentation
    )


@pytest.mark.parametrize("api_value", _policy_shape().members["Strategy"].enum)
def test_each_strategy_of_the_model_is_sent_exactly(api_value: str) -> None:
    ours = api_value.lower().replace("_", "-")  # idle-release, consolidation
    for given in (ours, api_value):  # the API's spelling is accepted too
        p = _plan(scale_to_zero=True, scale_in_strategy=given)
        assert p.ok, [c for c in p.checks if c.status == "fail"]
        assert _scaling(p) == {
            "Status": "ENABLED",
            "MinInstanceCount": 0,
            "MaxInstanceCount": 1,
            "ScaleInPolicy": {"Strategy": api_value},
        }
        assert _config_errors(p.create_endpoint_config) == ""
        checks = {c.name: c for c in p.checks}
        assert checks["aws.request_shapes"].status == "pass"
        assert checks["inference_components.scale_in"].message.startswith(
            f"ScaleInPolicy {api_value}"
        )


def test_consolidation_with_step_and_cooldown_at_the_model_bounds() -> None:
    (step_lo, step_hi), (cool_lo, cool_hi) = _range("MaximumStepSize"), _range("CooldownInMinutes")
    for step, cooldown in ((step_lo, cool_lo), (step_hi, cool_hi)):
        p = _plan(
            scale_in_strategy="consolidation",
            scale_in_max_step=step,
            scale_in_cooldown_minutes=cooldown,
            max_instances=2,
        )
        assert p.ok
        assert _scaling(p)["ScaleInPolicy"] == {
            "Strategy": "CONSOLIDATION",
            "MaximumStepSize": step,
            "CooldownInMinutes": cooldown,
        }
        assert _config_errors(p.create_endpoint_config) == ""


@pytest.mark.parametrize(
    ("member", "option", "field"),
    [
        ("MaximumStepSize", "--scale-in-max-step", "max_step_size"),
        ("CooldownInMinutes", "--scale-in-cooldown-minutes", "cooldown_minutes"),
    ],
)
def test_out_of_range_values_exit_2_with_one_line(
    member: str, option: str, field: str, capsys: Any, offline: None
) -> None:
    lo, hi = _range(member)
    # botocore's validator lets a value above the maximum through (it checks minima
    # only): the request would leave the machine without peagle's own check.
    request = {
        "EndpointConfigName": "c",
        "ProductionVariants": [
            {
                "VariantName": "AllTraffic",
                "InstanceType": "ml.g7e.2xlarge",
                "InitialInstanceCount": 1,
                "ManagedInstanceScaling": {
                    "ScaleInPolicy": {"Strategy": "CONSOLIDATION", member: hi + 1}
                },
            }
        ],
    }
    assert _config_errors(request) == ""
    for bad in (lo - 1, hi + 1):
        code, out, err = run_cli(
            capsys, "plan", *ONE, "--scale-in-strategy", "consolidation", option, str(bad)
        )
        assert code == 2 and out == ""
        (line,) = err.splitlines()
        assert line.startswith(f"error: inference_components.scale_in.{field}: "), line


def test_an_unknown_strategy_exits_2_naming_the_choices(capsys: Any, offline: None) -> None:
    code, _, err = run_cli(capsys, "plan", *ONE, "--scale-in-strategy", "idle")
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith("error: inference_components.scale_in.strategy: ")
    assert "'idle-release' or 'consolidation'" in line


def test_step_and_cooldown_are_refused_without_consolidation(capsys: Any, offline: None) -> None:
    # The model documents both as governing consolidation scale-in only.
    for doc in ("MaximumStepSize", "CooldownInMinutes"):
        assert "consolidation" in _policy_shape().members[doc].documentation
    code, _, err = run_cli(
        capsys, "plan", *ONE, "--scale-in-strategy", "idle-release", "--scale-in-max-step", "2"
    )
    assert code == 2
    (line,) = err.splitlines()
    assert "max_step_size: consolidation scale-in only" in line
    code, _, err = run_cli(capsys, "plan", *ONE, "--scale-in-cooldown-minutes", "30")
    assert code == 2 and "needs its strategy" in err and len(err.splitlines()) == 1


def test_unset_sends_no_policy_and_scale_to_zero_prints_a_hint() -> None:
    p = _plan(scale_to_zero=True)
    assert "ScaleInPolicy" not in _scaling(p)
    (hint,) = [c for c in p.checks if c.name == "inference_components.scale_in"]
    assert hint.status == "pass" and "scale_in_strategy='idle-release'" in hint.message
    p = _plan(min_instances=1)  # instances never reach zero: no hint
    assert "ScaleInPolicy" not in _scaling(p)
    assert not [c for c in p.checks if c.name == "inference_components.scale_in"]


def test_a_spec_file_takes_the_short_form_and_the_mapping() -> None:
    base = {"model": "gpt-oss-20b", "role": ROLE, "endpoint": {"instance_type": "ml.g7e.2xlarge"}}
    hosting = {"hosting": "inference-components", "instance_type": "ml.g7e.2xlarge"}
    short = plan(
        spec_from_options(
            base={**base, "endpoint": hosting, "inference_components": {"scale_in": "idle-release"}}
        )
    )
    assert _scaling(short)["ScaleInPolicy"] == {"Strategy": "IDLE_RELEASE"}
    full = {"strategy": "consolidation", "cooldown_minutes": 30}
    mapping = plan(
        spec_from_options(
            base={**base, "endpoint": hosting, "inference_components": {"scale_in": full}}
        )
    )
    assert _scaling(mapping)["ScaleInPolicy"] == {
        "Strategy": "CONSOLIDATION",
        "CooldownInMinutes": 30,
    }
    with pytest.raises(SpecError, match="scale_in.strategy"):
        spec_from_options(base={**base, "inference_components": {"scale_in": "fast"}})


# Spec hashes peagle computed at commit 6cdca4a, before `scale_in` existed (run there with
# the same options). An endpoint deployed then carries this hash in its tags: the new
# field at its default must hash the same, or `apply`/`diff` would report drift on every
# existing component endpoint.
HASHES_BEFORE_SCALE_IN = {
    "one component, scale to zero": (
        {"components": ["p-eagle:k=7"], "scale_to_zero": True},
        "75083d89ef2d6ff99f88f4a92c20be805e96bb34c184975464826eaec58f9f79",
    ),
    "two components": (
        {
            "components": ["p-eagle:k=7", "baseline"],
            "instance_type": "ml.g7e.12xlarge",
            "accelerators_per_copy": 1,
            "max_instances": 2,
        },
        "92365571e180cde42d6e7816ac51fb49bdc9bc9de6aa400ec87611ae3cfaf212",
    ),
}


@pytest.mark.parametrize("case", sorted(HASHES_BEFORE_SCALE_IN))
def test_no_drift_on_component_endpoints_deployed_before_the_field(case: str) -> None:
    options, sha = HASHES_BEFORE_SCALE_IN[case]
    options = {"instance_type": "ml.g7e.2xlarge", **options}
    spec = spec_from_options("gpt-oss-20b", role=ROLE, **options)
    assert spec.sha256() == sha
    changed = spec_from_options(
        "gpt-oss-20b", role=ROLE, scale_in_strategy="idle-release", **options
    )
    assert changed.sha256() != sha  # a set policy is a change apply/diff must see
