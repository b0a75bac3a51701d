"""One result family (issue 34, item 4): every public result is a frozen dataclass with
`to_dict()`, its fields documented in an `Attributes:` section (so the generated reference
has no empty attribute boxes), no `dict` subclass, no `__getattr__` forwarding. The ten
results that were dicts still answer `result["key"]` for one release, with a FutureWarning
that names the attribute."""

from __future__ import annotations

import dataclasses
import importlib
import re

import pytest

# Every result an SDK call returns: (module, class). A handle (Endpoint), a session
# (ChatSession) or an input (DeploymentSpec) is not a result. The sandbox plugin's SDK
# (peagle_sandbox.start|status|stop) keeps to the same family.
RESULTS = [
    ("sm_peagle.ops.endpoints", "EndpointStatus"),
    ("sm_peagle.ops.endpoints", "ComponentStatus"),
    ("sm_peagle.ops.endpoints", "UnfinishedOperation"),
    ("sm_peagle.ops.endpoints", "EndpointSummary"),
    ("sm_peagle.ops.endpoints", "DeleteResult"),
    ("sm_peagle.ops.endpoints", "GcResult"),
    ("sm_peagle.ops.endpoints", "LogEvent"),
    ("sm_peagle.ops.endpoints", "LogStream"),
    ("sm_peagle.ops.changes", "UpdateResult"),
    ("sm_peagle.ops.deployment", "ApplyResult"),
    ("sm_peagle.ops.deployment", "Deployment"),
    ("sm_peagle.lifecycle.adopt", "AdoptResult"),
    ("sm_peagle.ops.measure_results", "BenchResult"),
    ("sm_peagle.ops.measure_results", "SweepResult"),
    ("sm_peagle.ops.measure_results", "RaceResult"),
    ("sm_peagle.ops.measure_results", "RaceSide"),
    ("sm_peagle.ops.measure_results", "TuneKResult"),
    ("sm_peagle.ops.measure_results", "KEstimate"),
    ("sm_peagle.ops.measure_results", "KRow"),
    ("sm_peagle.ops.measure_results", "ReportResult"),
    ("sm_peagle.ops.measure_results", "MeasureText"),
    ("sm_peagle.ops.measure_traffic_results", "InvokeResult"),
    ("sm_peagle.ops.measure_traffic_results", "ChatTranscript"),
    ("sm_peagle.ops.catalog", "Recommendation"),
    ("sm_peagle.ops.iac", "ExportResult"),
    ("sm_peagle.ops.iac", "IamPolicy"),
    ("sm_peagle.ops.drafter", "DrafterCheck"),
    ("sm_peagle.ops.drafter", "DrafterPush"),
    ("sm_peagle.ops.doctor", "DoctorReport"),
    ("sm_peagle.ops.doctor", "DoctorCheck"),
    ("peagle_sandbox.sdk", "SandboxStart"),
    ("peagle_sandbox.sdk", "SandboxState"),
    ("peagle_sandbox.sdk", "SandboxStop"),
]
# The results that were dicts before issue 34.
WERE_DICTS = [
    ("sm_peagle.ops.endpoints", "EndpointStatus"),
    ("sm_peagle.ops.endpoints", "DeleteResult"),
    ("sm_peagle.ops.endpoints", "LogEvent"),
    ("sm_peagle.ops.measure_results", "BenchResult"),
    ("sm_peagle.ops.measure_results", "SweepResult"),
    ("sm_peagle.ops.measure_results", "RaceResult"),
    ("sm_peagle.ops.measure_results", "TuneKResult"),
    ("sm_peagle.ops.measure_results", "ReportResult"),
]


def _cls(module: str, name: str) -> type:
    return getattr(importlib.import_module(module), name)


def _documented(cls: type) -> set[str]:
    """The names an `Attributes:` section of the class docstring documents."""
    doc = cls.__doc__ or ""
    if "Attributes:" not in doc:
        return set()
    section = doc.split("Attributes:", 1)[1]
    return set(re.findall(r"^\s{4,8}(\w+):", section, re.M))


@pytest.mark.parametrize(("module", "name"), RESULTS, ids=[n for _, n in RESULTS])
def test_every_public_result_is_a_frozen_documented_dataclass(module: str, name: str) -> None:
    cls = _cls(module, name)
    assert not issubclass(cls, dict), f"{name} subclasses dict"
    assert dataclasses.is_dataclass(cls), f"{name} is not a dataclass"
    assert cls.__dataclass_params__.frozen, f"{name} is not frozen"  # type: ignore[attr-defined]
    assert callable(getattr(cls, "to_dict", None)), f"{name} has no to_dict()"
    assert "__getattr__" not in vars(cls), f"{name} forwards attributes"
    public = {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
    missing = public - _documented(cls)
    assert not missing, f"{name}: fields not in its Attributes section: {sorted(missing)}"


@pytest.mark.parametrize(("module", "name"), WERE_DICTS, ids=[n for _, n in WERE_DICTS])
def test_a_result_that_was_a_dict_answers_its_keys_with_a_future_warning(
    module: str, name: str
) -> None:
    cls = _cls(module, name)
    if name == "LogEvent":
        result = cls(timestamp=1, stream="s", message="m", spec_decoding=None, label="AWS")
        key, value = "message", "m"
    elif name in ("EndpointStatus", "DeleteResult"):
        result = cls.from_dict(
            {"endpoint": "ep", "status": "InService"}
            if name == "EndpointStatus"
            else {"endpoint": "ep", "deleted": []}
        )
        key, value = "endpoint", "ep"
    else:
        kw = {"out_dir": "d"} if name == "SweepResult" else {}
        result = cls({"label": "AWS", "verdict": "v", "runs": [], "estimates": []}, **kw)
        key, value = "label", "AWS"
    with pytest.warns(FutureWarning, match=rf"{name}\['{key}'\] is deprecated: use .{key}"):
        assert result[key] == value
    with pytest.warns(FutureWarning, match=rf"{name}.get\('{key}'\) is deprecated"):
        assert result.get(key) == value
    with pytest.warns(FutureWarning, match=rf"{name}.keys\(\) is deprecated"):
        assert key in list(result.keys())
    assert getattr(result, key) == value


def test_a_document_result_keeps_exactly_the_keys_it_was_read_from() -> None:
    """`--json` prints what it printed when the result was a dict: a broken endpoint's
    document has `problem`/`fix` and no `mode`; a key no field holds is refused, not
    dropped."""
    from sm_peagle.ops.endpoints import EndpointStatus

    doc = {"endpoint": "ep", "status": "Failed", "problem": "its model m is missing", "fix": "x"}
    st = EndpointStatus.from_dict(doc)
    assert st.to_dict() == doc and list(st.to_dict()) == list(doc)
    assert st.mode is None and st.problem == doc["problem"]
    with pytest.raises(ValueError, match="no field for colour"):
        EndpointStatus.from_dict({**doc, "colour": "blue"})


def test_an_endpoint_s_components_are_typed_and_their_rows_unchanged() -> None:
    from sm_peagle.ops.endpoints import ComponentStatus, EndpointStatus

    row = {"name": "ep-p-eagle", "status": "InService", "mode": "p-eagle", "k": 7,
           "desired_copies": 1, "current_copies": 1, "scaled_to_zero": False}  # fmt: skip
    doc = {"endpoint": "ep", "status": "InService", "mode": "components", "components": [row]}
    st = EndpointStatus.from_dict(doc)
    [c] = st.components or []
    assert isinstance(c, ComponentStatus) and (c.name, c.k, c.mode) == ("ep-p-eagle", 7, "p-eagle")
    assert st.to_dict() == doc and list(st.to_dict()["components"][0]) == list(row)
    with pytest.warns(FutureWarning, match=r"ComponentStatus\['k'\] is deprecated: use .k"):
        assert c["k"] == 7


def test_a_key_without_an_attribute_points_at_the_document() -> None:
    """Only the result's main parts are attributes; the rest of a results document is read
    from `.document` (the warning says so rather than naming an attribute that is not
    there)."""
    from sm_peagle.ops.measure_results import BenchResult

    r = BenchResult({"schema": "peagle.bench/3", "component": "ep-baseline"})
    with pytest.warns(
        FutureWarning, match=r"\['schema'\] is deprecated: use .document\['schema'\]"
    ):
        assert r["schema"] == r.document["schema"]
    with pytest.warns(FutureWarning, match=r"\['component'\] is deprecated: use .component$"):
        assert r["component"] == r.component == "ep-baseline"
