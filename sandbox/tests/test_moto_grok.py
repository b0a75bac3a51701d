"""The harness's CloudWatch Logs evaluation, one event at a time: filter patterns (AWS's
"Filter pattern syntax for metric filters"), the processors it emulates, the datapoint a
metric filter publishes, and a loud refusal for what it does not emulate."""

from __future__ import annotations

import pytest

from peagle_sandbox.testing.moto_grok import NotEmulated, datapoint, matches, transform

EVENT = {"latency": 120, "status": "ok", "nested": {"code": 5}, "flag": True, "text": "12"}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("{ $.latency > 100 }", True),
        ("{ $.latency >= 120 }", True),
        ("{ $.latency < 120 }", False),
        ("{ $.latency <= 119.5 }", False),
        ("{ $.latency = 120 }", True),
        ("{ $.latency != 120 }", False),
        ('{ $.status = "ok" }', True),
        ("{ $.status = ok }", True),
        ('{ $.status != "ok" }', False),
        ("{ $.nested.code = 5 }", True),
        ("{ $.missing != 1 }", False),  # a missing field matches no comparison
        ("{ $.text > 1 }", False),  # a numeric comparison needs a number
        ("{ $.flag = 1 }", False),
        ("{ $.latency > 100 && $.status = ok }", True),
        ("{ $.latency > 500 || $.status = ok }", True),
        ("{ $.latency > 500 || $.status = bad && $.nested.code = 5 }", False),
        ("{ ($.latency > 500 || $.status = ok) && $.nested.code = 5 }", True),
        ("{$.latency>100}", True),
    ],
)
def test_json_patterns(pattern: str, expected: bool) -> None:
    assert matches(pattern, "", EVENT) is expected


def test_a_json_pattern_never_matches_an_event_that_is_not_json() -> None:
    assert matches("{ $.latency > 1 }", "latency 5", None) is False


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("", True),
        ("ERROR", True),
        ("ERROR engine", True),  # every term, anywhere
        ('"engine dead"', True),
        ('"dead engine"', False),
        ("error", False),  # case-sensitive
        ("ERROR WARN", False),
    ],
)
def test_term_patterns_on_raw_text(pattern: str, expected: bool) -> None:
    assert matches(pattern, "ERROR engine dead: pid 283", None) is expected


@pytest.mark.parametrize(
    "pattern",
    ["?ERROR ?WARN", "-INFO", "%ERR.*%", "[ip, user]", "{ $.a IS NULL }", "{ $.a = abc* }",
     "{ $.a EXISTS }", "{ $.a > 1"],
)  # fmt: skip
def test_patterns_the_harness_does_not_emulate_are_refused_by_name(pattern: str) -> None:
    with pytest.raises(NotEmulated, match="not emulated"):
        matches(pattern, "ERROR", {"a": 1})


def test_grok_fields_are_strings_until_converted_and_a_non_match_adds_nothing() -> None:
    config = [{"grok": {"match": "took %{NUMBER:ms} ms, %{INT:n} items%{GREEDYDATA:rest}"}}]
    assert transform(config, "request took 12.5 ms, 3 items; done") == {
        "ms": "12.5", "n": "3", "rest": "; done"
    }  # fmt: skip
    assert transform(config, "nothing to see") == {}
    converted = config + [
        {"typeConverter": {"entries": [{"key": "ms", "type": "integer"},
                                       {"key": "n", "type": "integer"}]}}
    ]  # fmt: skip
    # "12.5" is no integer: left as it was (ASSUMPTION); "3" is.
    assert transform(converted, "took 12.5 ms, 3 items") == {"ms": "12.5", "n": 3, "rest": ""}


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ([{"grok": {"match": "%{IPV4:ip}"}}], "IPV4"),
        ([{"grok": {"match": "%{NUMBER:n:float}"}}], ":float"),
        ([{"csv": {}}], "csv"),
    ],
)
def test_processors_and_grok_patterns_not_emulated_are_named(config: list, name: str) -> None:
    with pytest.raises(NotEmulated, match=name):
        transform(config, "1.2.3.4")


def test_a_datapoint_needs_its_value_and_every_dimension() -> None:
    f = {
        "filterPattern": "{ $.n >= 1 }",
        "metricTransformations": [{"metricName": "M", "metricNamespace": "T",
                                   "metricValue": "$.n", "dimensions": {"Ep": "$.ep"}}],
    }  # fmt: skip
    point = datapoint(f, "", {"n": 2.5, "ep": "a"})
    assert point is not None
    assert (point.value, point.dimensions, point.unit) == (2.5, (("Ep", "a"),), "None")
    assert datapoint(f, "", {"n": 2.5}) is None  # the dimension's field is missing
    assert datapoint(f, "", {"n": 0.5, "ep": "a"}) is None  # no match, no defaultValue
