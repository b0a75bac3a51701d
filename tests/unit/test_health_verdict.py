"""The health verdict, each case from its rule (docs/guides/health.md, "The verdicts"; design 37):

- a baseline endpoint -> "off"; no SpecDecoding data: traffic -> "off", idle -> "no data";
- acceptance length L < 1.01 -> "off"; L < threshold -> "degraded"; else "paying";
- L over a window is exact from the counts, 1 + K x sum(accepted) / sum(drafted) (vLLM's
  1 + accepted / drafts with drafts = drafted / K), the mean of the lines' lengths with a
  K schedule; the threshold is the alarm's, else 1 + 0.05 x (1 + K);
- the evidence says how many of the window's periods had data.
"""

from __future__ import annotations

import pytest

from sm_peagle.lifecycle.health_read import Sample
from sm_peagle.ops.health_results import VERDICTS, HealthReport, health_verdict

START = 1_800_000_000.0  # on a 60 s boundary
HOUR = (START, START + 3600.0)


def line(at: float, accepted: int, drafted: int, k: int = 3) -> Sample:
    """A SpecDecoding line as vLLM writes it: Mean acceptance length = 1 + accepted /
    drafts, drafts = drafted / K."""
    return Sample(t=START + at, acceptance_length=1 + accepted / (drafted / k), accepted=accepted,
                  drafted=drafted)  # fmt: skip


def judge(samples: list[Sample], **kw: object) -> HealthReport:
    args: dict[str, object] = {
        "endpoint": "ep",
        "source": "log lines",
        "window": HOUR,
        "period_seconds": 60,
        "samples": samples,
        "traffic": None,
        "k": 3,
    }
    args.update(kw)
    return health_verdict(**args)  # type: ignore[arg-type]


def test_idle_is_no_data_not_paying_nor_off() -> None:
    r = judge([])
    assert r.verdict == "no data"
    assert r.acceptance_length is None and r.samples == 0
    assert r.periods_with_data == 0 and r.periods == 60
    assert any("idle" in e for e in r.evidence)


def test_serving_without_spec_lines_is_off_and_says_what_showed_traffic() -> None:
    r = judge([], traffic="3 engine stats line(s) with generation throughput > 0")
    assert r.verdict == "off"
    assert any("serving (3 engine stats line(s)" in e for e in r.evidence), r.evidence


def test_a_baseline_endpoint_is_off() -> None:
    r = judge([], baseline=True, k=None, traffic="busy")
    assert r.verdict == "off"
    assert "a baseline endpoint: no speculation" in " ".join(r.evidence)
    assert r.threshold is None


def test_drafts_never_accepted_is_off() -> None:
    # 0 accepted of 300 drafted: L = 1.0 < 1.01
    r = judge([line(10, 0, 300)])
    assert r.verdict == "off"
    assert r.acceptance_length == 1.0 and r.draft_acceptance_rate == 0.0


def test_below_the_default_threshold_for_k_is_degraded() -> None:
    # K=3: default threshold 1 + 0.05 x 4 = 1.2; L = 1 + 3 x 30/600 = 1.15
    r = judge([line(10, 30, 600)])
    assert r.threshold == 1.2 and "default for K=3" in (r.threshold_source or "")
    assert r.acceptance_length == pytest.approx(1.15)
    assert r.verdict == "degraded"


def test_at_the_threshold_is_paying() -> None:
    # L = 1 + 3 x 20/300 = 1.2, exactly the threshold: "below" is what degrades
    r = judge([line(10, 20, 300)])
    assert r.acceptance_length == pytest.approx(1.2)
    assert r.verdict == "paying"


def test_paying_with_rate_from_the_counts() -> None:
    r = judge([line(10, 120, 300)])
    assert r.verdict == "paying"
    assert r.acceptance_length == pytest.approx(2.2)  # 1 + 3 x 0.4
    assert r.draft_acceptance_rate == pytest.approx(0.4)
    assert any("draft acceptance rate 40.0%" in e for e in r.evidence)


def test_window_acceptance_is_exact_from_the_counts_not_the_mean_of_lines() -> None:
    # Line 1: 100 drafts, 10 accepted (L 1.1); line 2: 10 drafts, 24 accepted (L 3.4).
    # Mean of lines 2.25; exact over the window: 1 + 34 / 110 = 1.309.
    lines = [line(10, 10, 300), line(20, 24, 30)]
    r = judge(lines, threshold=2.0, threshold_source="alarm ep-speculation")
    assert r.acceptance_length == pytest.approx(1 + 34 / 110, abs=1e-4)
    assert r.verdict == "degraded"
    assert any("inferred: a draft step proposes K=3 tokens" in e for e in r.evidence)


def test_a_k_schedule_uses_the_mean_of_the_lines_and_says_so() -> None:
    lines = [line(10, 10, 300), line(20, 24, 30)]
    r = judge(lines, threshold=2.0, threshold_source="alarm", k_schedule=True)
    assert r.acceptance_length == pytest.approx((1.1 + 3.4) / 2)
    assert r.verdict == "paying"
    assert any("mean of the lines' acceptance lengths (a K schedule" in e for e in r.evidence)


def test_a_metric_period_counts_its_lines_in_the_mean() -> None:
    # Without counts, a period averaging 3 lines weighs 3 times a period of one line.
    samples = [
        Sample(t=START, acceptance_length=2.0, count=3),
        Sample(t=START + 60, acceptance_length=1.0, count=1),
    ]
    r = judge(samples, source="metric")
    assert r.acceptance_length == pytest.approx((3 * 2.0 + 1.0) / 4)
    assert r.samples == 4 and r.periods_with_data == 2


def test_few_lines_say_how_many_periods_had_data() -> None:
    # Three lines, two in the first minute and one in the 31st: 2 of 60 periods.
    r = judge([line(5, 120, 300), line(15, 120, 300), line(1805, 120, 300)])
    assert r.periods_with_data == 2 and r.periods == 60 and r.samples == 3
    assert any(e.startswith("data in 2 of 60 periods (3 SpecDecoding line(s))") for e in r.evidence)


def test_the_alarm_is_evidence_and_its_threshold_wins() -> None:
    alarm = {"name": "ep-speculation", "state": "ALARM", "reason": "Threshold Crossed"}
    r = judge([line(10, 120, 300)], threshold=2.5, threshold_source="alarm ep-speculation",
              alarm=alarm)  # fmt: skip
    assert r.threshold == 2.5 and r.verdict == "degraded"  # 2.2 < 2.5
    assert "alarm ep-speculation: ALARM: Threshold Crossed" in r.evidence


def test_the_document_has_every_field() -> None:
    doc = judge([]).to_dict()
    assert doc["verdict"] in VERDICTS
    assert list(doc) == [
        "endpoint", "verdict", "source", "window_start", "window_end", "k", "threshold",
        "threshold_source", "acceptance_length", "draft_acceptance_rate", "samples",
        "periods_with_data", "periods", "period_seconds", "alarm", "evidence",
    ]  # fmt: skip
    assert doc["window_start"] == "2027-01-15T08:00:00+00:00"


def test_the_invocations_request_does_not_move_with_where_in_the_minute_it_is_asked() -> None:
    """The window's span is whole periods plus the one in progress, so it varies between
    two calls a moment apart; the request must not (the CLI and the SDK send the same
    one). SageMaker publishes Invocations per minute: Period 60, summed."""
    from sm_peagle.lifecycle.health_read import sagemaker_invocations

    sent: list[dict] = []

    class CloudWatch:
        def get_metric_data(self, **kw: object) -> dict:
            sent.append(kw)
            return {"MetricDataResults": [{"Values": [2.0, 3.0]}]}

    class Aws:
        def client(self, service: str) -> CloudWatch:
            assert service == "cloudwatch"
            return CloudWatch()

    end = 1_800_000_000.0
    for span in (3540.0, 3599.5, 3600.0):
        got = sagemaker_invocations(Aws(), "ep", "AllTraffic", (end - span, end))
        assert got == "AWS/SageMaker Invocations 5"
    periods = {q["MetricStat"]["Period"] for kw in sent for q in kw["MetricDataQueries"]}
    assert periods == {60}
