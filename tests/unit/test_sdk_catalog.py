"""The catalog through the SDK (`sm_peagle.models`, `instances`, `schema`, `recommend`): the
same data the CLI prints, and the same SpecError for the same bad input on both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle.cli.faces import CliFace
from sm_peagle.errors import SpecError
from tests.plan_helpers import run_cli


def test_models_are_the_catalog_and_the_cli_prints_them(capsys) -> None:
    from sm_peagle.catalog.models import MODELS

    got = sm_peagle.models()
    assert got == list(MODELS)
    code, out, _ = run_cli(capsys, "models", "--json")
    # The CLI's list is the SDK's, each item labelled (issue 26's --json contract).
    want = [{"label": "AWS", **m.to_dict()} for m in got]
    assert code == 0 and json.loads(out) == json.loads(json.dumps(want))


def test_instances_without_live_prices_send_nothing(capsys, monkeypatch) -> None:
    from sm_peagle.catalog.instances import INSTANCES
    from sm_peagle.lifecycle import live_prices

    def no_lookup(*a, **k):
        raise AssertionError("no Price List call without live_prices")

    monkeypatch.setattr(live_prices, "with_live_prices", no_lookup)
    said: list[str] = []
    got = sm_peagle.Client(progress=said.append).instances()
    assert got == list(INSTANCES.values()) and said == []
    code, out, _ = run_cli(capsys, "instances", "--json")
    want = [{"label": "AWS", **i.to_dict()} for i in got]
    assert code == 0 and json.loads(out) == json.loads(json.dumps(want))


def test_live_prices_say_where_they_talk_and_one_warning(monkeypatch) -> None:
    from sm_peagle.catalog import pricing
    from sm_peagle.lifecycle import live_prices

    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_SAGEMAKER", raising=False)

    def offline(items, region, aws):
        return [pricing.kept_price(i, "<html><b>denied</b></html>") for i in items]

    monkeypatch.setattr(live_prices, "with_live_prices", offline)
    said: list[str] = []
    got = sm_peagle.Client(progress=said.append).instances(live_prices=True)
    assert said[0] == "talking to: AWS, region us-west-2" and len(said) == 2
    # One readable warning line: the HTML a proxy may answer with is stripped.
    assert said[1].startswith("warning: live prices: ") and "denied" in said[1]
    assert "<" not in said[1]
    assert all(i.price_note for i in got)


def test_schema_is_the_spec_schema_and_what_the_cli_prints(capsys) -> None:
    from sm_peagle.planning.spec.model import DeploymentSpec

    doc = sm_peagle.schema()
    assert doc == DeploymentSpec.model_json_schema()
    code, out, _ = run_cli(capsys, "schema")
    assert code == 0 and json.loads(out) == doc


def test_recommend_result_is_the_cli_json(capsys) -> None:
    rec = sm_peagle.recommend("gpt-oss-20b", sequences=4)
    assert isinstance(rec, sm_peagle.Recommendation)
    assert rec.model == "gpt-oss-20b" and rec.candidates
    assert rec.basis.endswith("(no measurement)")
    code, out, err = run_cli(capsys, "recommend", "gpt-oss-20b", "--sequences", "4", "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps({"label": "AWS", **rec.to_dict()}))


# (SDK keywords, CLI arguments, what Python says, what the CLI says): one error, the
# parameter named as each face names it (`sequences=` / `--sequences`).
BAD_RECOMMEND = [
    ({"model": "no-such-model"}, ["no-such-model"], "unknown model", "unknown model"),
    (
        {"mode": "medusa"},
        ["--mode", "medusa"],
        "speculative.mode: 'medusa' is not",
        "speculative.mode: 'medusa' is not",
    ),
    (
        {"sequences": 0},
        ["--sequences", "0"],
        "sequences=: must be at least 1 (got 0)",
        "--sequences: must be at least 1 (got 0)",
    ),
    (
        {"max_model_len": -1},
        ["--max-model-len", "-1"],
        "max_model_len=: must be at least 1",
        "--max-model-len: must be at least 1",
    ),
    (
        {"budget": -2.0},
        ["--budget", "-2"],
        "budget=: must be a positive $/h (got -2)",
        "--budget: must be a positive $/h (got -2)",
    ),
]


@pytest.mark.parametrize(("kwargs", "argv", "message", "cli_message"), BAD_RECOMMEND)
def test_recommend_refuses_the_same_way_in_the_sdk_and_the_cli(
    capsys, monkeypatch, kwargs, argv, message, cli_message
) -> None:
    from sm_peagle.planning import recommend as ranking

    def no_ranking(*a, **k):
        raise AssertionError("ranked despite a bad argument")

    monkeypatch.setattr(ranking, "candidates", no_ranking)
    args = {"model": "gpt-oss-20b", **kwargs}
    with pytest.raises(SpecError) as e:
        sm_peagle.recommend(args.pop("model"), **args)
    assert message in str(e.value.message)
    model = argv[0] if kwargs.get("model") else "gpt-oss-20b"
    rest = argv[1:] if kwargs.get("model") else argv
    code, out, err = run_cli(capsys, "recommend", model, *rest)
    assert code == 2 and out == ""
    assert cli_message in err and len(err.strip().splitlines()) == 1
    # The same error: only the wording of the parameter differs.
    assert err.startswith(f"error: {e.value.message.render(CliFace('recommend'))}")


def test_recommend_results_of_another_model_are_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"model": "gpt-oss-120b"}))
    with pytest.raises(SpecError) as e:
        sm_peagle.recommend("gpt-oss-20b", results_dir=tmp_path)
    assert "no results for gpt-oss-20b" in e.value.message and "gpt-oss-120b" in e.value.message
    assert e.value.message.startswith("results_dir=: ") and e.value.field == "results_dir"
    code, _, err = run_cli(capsys, "recommend", "gpt-oss-20b", "--results-dir", str(tmp_path))
    assert code == 2 and e.value.message.render(CliFace("recommend")) in err
    assert err.startswith("error: --results-dir: ") and "or drop --results-dir)" in err
    with pytest.raises(SpecError, match="no result JSON files"):
        sm_peagle.recommend("gpt-oss-20b", results_dir=tmp_path / "missing")


# -- issue 35 (one vocabulary): recommend's renamed options, each deprecated for one release --
def _bench_doc() -> dict:
    return {
        "model": "gpt-oss-20b",
        "simulated": False,
        "instance_type": "ml.g7e.2xlarge",
        "levels": [{"output_tokens_per_s": 1000.0}],
    }


def test_recommend_old_cli_spellings_work_for_one_release_and_warn_once(
    tmp_path: Path, capsys
) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_bench_doc()))
    new = ["--sequences", "200", "--results-dir", str(tmp_path), "--json"]
    code, want, err = run_cli(capsys, "recommend", "gpt-oss-20b", *new)
    assert (code, err) == (0, "")
    old = ["--concurrency", "200", "--results", str(tmp_path), "--json"]
    code, out, err = run_cli(capsys, "recommend", "gpt-oss-20b", *old)
    assert code == 0 and json.loads(out) == json.loads(want)
    assert err.splitlines() == [
        "warning: --concurrency is deprecated, use --sequences (removed in the next release)",
        "warning: --results is deprecated, use --results-dir (removed in the next release)",
    ]


def test_concurrency_is_not_deprecated_where_it_is_a_list_of_levels(capsys) -> None:
    """Only recommend's `--concurrency` was renamed: bench/sweep/tune-k keep theirs."""
    for command in (["bench", "ep"], ["sweep", "gpt-oss-20b"], ["tune-k", "ep"]):
        code, _, err = run_cli(capsys, *command, "--concurrency", "1,4", "--help")
        assert code == 0 and "deprecated" not in err, command


def test_recommend_old_sdk_keywords_work_for_one_release_with_a_future_warning(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_bench_doc()))
    want = sm_peagle.recommend("gpt-oss-20b", sequences=200, results_dir=tmp_path)
    with pytest.warns(FutureWarning) as caught:
        got = sm_peagle.Client().recommend("gpt-oss-20b", concurrency=200, results=tmp_path)
    assert got == want
    assert [str(w.message) for w in caught] == [
        "recommend(concurrency=) is deprecated: use sequences= (removed in the next release)",
        "recommend(results=) is deprecated: use results_dir= (removed in the next release)",
    ]
    # The warning points at the caller's line, not at peagle's, from the client's method and
    # from the module function (the default client's method) alike.
    assert {w.filename for w in caught} == {__file__}
    with pytest.warns(FutureWarning, match=r"use sequences=") as caught:
        assert sm_peagle.recommend("gpt-oss-20b", concurrency=200) == sm_peagle.recommend(
            "gpt-oss-20b", sequences=200
        )
    assert [w.filename for w in caught] == [__file__]


def test_recommend_refuses_both_spellings_and_unknown_keywords() -> None:
    with pytest.raises(TypeError, match=r"give sequences= only"):
        sm_peagle.recommend("gpt-oss-20b", sequences=2, concurrency=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sequence'"):
        sm_peagle.recommend("gpt-oss-20b", sequence=2)
