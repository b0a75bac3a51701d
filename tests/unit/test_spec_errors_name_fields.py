"""A spec error names the option to change as data: `.field` is the SDK keyword (`k`,
`k_schedule`, `component`), `str()` words it as Python does (`k=7`), and the CLI prints
the same error with its flags (`-k 7`), exactly as it always has.

The CLI lines below are the ones `peagle` printed before the SDK learnt to speak Python
(issue 34: no behaviour a CLI user sees changes); the numbers in them come from the
catalog's head for gpt-oss-20b (trained for K=10, 7 recommended).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

import sm_peagle
from sm_peagle.checks import failed, passed
from sm_peagle.errors import CheckFailed, Param, SpecError, text
from sm_peagle.planning.components.change import change_component
from sm_peagle.planning.spec.loading import KEYWORDS, keyword_for
from sm_peagle.planning.spec.options import SpecOptions, spec_from_options
from tests.plan_helpers import make_offline, run_cli


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    make_offline(monkeypatch, tmp_path)


def sdk_error(call) -> SpecError:
    with pytest.raises(SpecError) as err:
        call()
    return err.value


def cli_line(capsys, *argv: str) -> str:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "", err
    (line,) = err.splitlines()
    return line


# -- K ----------------------------------------------------------------------------------
def test_k_above_the_trained_k_names_k_in_python_and_dash_k_at_the_cli(offline, capsys) -> None:
    error = sdk_error(lambda: sm_peagle.plan("gpt-oss-20b", k=16).raise_for_failures())
    assert isinstance(error, CheckFailed) and error.field == "k"
    assert str(error) == (
        "speculative.num_speculative_tokens: K=16 exceeds the drafter's trained K=10 "
        "(fix: use k=7 (at most 10))"
    )
    assert "-k" not in str(error)
    # deploy: it refuses at the plan (plan would print the plan first)
    assert cli_line(capsys, "deploy", "gpt-oss-20b", "-k", "16", "--yes") == (
        "error: speculative.num_speculative_tokens: K=16 exceeds the drafter's trained K=10 "
        "(fix: use -k 7 (at most 10))"
    )


def test_the_json_error_document_words_each_failed_check_for_the_cli(offline, capsys) -> None:
    code, out, _ = run_cli(capsys, "deploy", "gpt-oss-20b", "-k", "11", "--yes", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert (error["type"], error["field"]) == ("CheckFailed", "k")
    assert error["errors"] == [
        {
            "name": "speculative.num_speculative_tokens",
            "message": "K=11 exceeds the drafter's trained K=10",
            "fix": "use -k 7 (at most 10)",
            "field": "k",
        }
    ]


@pytest.mark.parametrize("k", [0, 129])
def test_k_out_of_vllms_range_carries_field_k_and_the_value(offline, capsys, k) -> None:
    error = sdk_error(lambda: sm_peagle.plan("gpt-oss-20b", k=k))
    assert (error.field, error.value) == ("k", k)
    # The message names the spec field either way (a spec file sets it too); only the
    # remedy's call is worded per face.
    line = cli_line(capsys, "plan", "gpt-oss-20b", "-k", str(k))
    assert line.startswith("error: speculative.num_speculative_tokens: K must be at")
    assert line == "error: " + str(error).replace("`sm_peagle.schema()`", "`peagle schema`") + (
        " (fix: `peagle schema` lists every field and its rules)"
    )


def test_k_with_mode_baseline_names_k(offline, capsys) -> None:
    error = sdk_error(lambda: sm_peagle.plan("gpt-oss-20b", mode="baseline", k=3))
    assert error.field == "k"
    assert "drop k=, or use mode p-eagle or eagle3" in str(error)
    assert "drop -k, or use mode p-eagle or eagle3" in cli_line(
        capsys, "plan", "gpt-oss-20b", "--mode", "baseline", "-k", "3"
    )


def test_a_bad_k_schedule_names_k_schedule(offline, capsys) -> None:
    error = sdk_error(lambda: sm_peagle.plan("gpt-oss-20b", k_schedule="1-4"))
    assert (error.field, error.value) == ("k_schedule", "1-4")
    assert str(error).startswith("k_schedule=: expected START-END:K entries")
    assert cli_line(capsys, "plan", "gpt-oss-20b", "--k-schedule", "1-4").startswith(
        "error: --k-schedule: expected START-END:K entries such as 1-4:7,5-32:5, got '1-4'"
    )


# -- components -------------------------------------------------------------------------
def test_a_component_change_without_anything_to_change_names_the_component() -> None:
    spec = spec_from_options("gpt-oss-20b", components=["p-eagle:k=7", "baseline"])
    error = sdk_error(lambda: change_component(spec, "ep", "p-eagle"))
    assert (error.field, error.value) == ("component", "p-eagle")
    assert str(error) == "update component='p-eagle': give k=, mode= or copies="
    from sm_peagle.cli.faces import cli_text

    assert cli_text(error.message, "update") == (
        "update --component p-eagle: give -k, --mode or --copies"
    )


def test_a_malformed_component_names_components() -> None:
    error = sdk_error(lambda: spec_from_options("gpt-oss-20b", components=["p-eagle:k=x"]))
    assert (error.field, error.value) == ("components", "p-eagle:k=x")
    assert str(error) == "components= 'p-eagle:k=x': k takes a whole number"


# -- the table from spec fields to keywords ---------------------------------------------
def test_every_spec_field_an_option_sets_has_its_keyword() -> None:
    """KEYWORDS is the inverse of SpecOptions.overrides(): each dotted field an option sets
    maps back to a keyword SpecOptions (or the MODEL argument) takes."""
    fields = {f.name for f in dataclasses.fields(SpecOptions)}
    assert set(KEYWORDS) == set(SpecOptions().overrides()) | {"model"}
    assert set(KEYWORDS.values()) <= fields | {"model"}
    assert keyword_for("inference_components.components.0.k") == "components"
    assert keyword_for("container.engine_args") is None


# -- checks -----------------------------------------------------------------------------
def test_check_failed_takes_its_field_from_the_first_failed_check() -> None:
    checks = [
        passed("fit", "fits"),
        failed("a", "bad", text("set {k}", k=Param("k", 3)), field="k"),
        failed("b", "worse", field="instance_type"),
    ]
    error = CheckFailed(checks)
    assert error.field == "k"
    assert str(error) == "a: bad (fix: set k=3); b: worse"
    assert [e.get("field") for e in error.to_dict()["errors"]] == ["k", "instance_type"]
    assert checks[1].to_dict()["field"] == "k" and "field" not in checks[0].to_dict()


def test_where_k_came_from_names_k_in_python_and_dash_k_in_plan_json(offline, capsys) -> None:
    """The plan's K origin is a note, not an error, worded the same way; the CLI's JSON
    renders it from a copy of the result (dataclasses.asdict), which must keep it whole."""
    plan = sm_peagle.plan("gpt-oss-20b", k=5)
    assert plan.k_origin.reason == "given with k= or in the spec"
    code, out, _ = run_cli(capsys, "plan", "gpt-oss-20b", "-k", "5", "--json")
    assert code == 0
    origin = json.loads(out)["k_origin"]
    assert origin["reason"] == "given with -k or in the spec"
    assert origin["text"].startswith("K=5 (given with -k or in the spec")
