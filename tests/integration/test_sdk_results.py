"""One result family (issue 34): what `status`, `delete`, `logs`, `update` and `adopt`
return is a frozen dataclass read by attribute, whose `to_dict()` is exactly the document
the command's `--json` prints, against the moto harness. The values checked come from
SageMaker's own describe answers (boto3, not peagle) and from the CLI's output; the old
`result["key"]` still answers, with a FutureWarning, for one release."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import boto3
import pytest

import sm_peagle
from tests.integration.lifecycle_env import REGION, World, run
from tests.integration.test_adopt import NAME as ADOPTED
from tests.integration.test_adopt import create_jumpstart_endpoint

NAME = "peagle-gpt-oss-20b-p-eagle"
LINE = "INFO SpecDecoding metrics: Mean acceptance length: 3.41, Accepted: 1 tokens"


def _json(capsys: pytest.CaptureFixture, *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def _unlabelled(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "label"}  # the CLI adds where it came from


def _frozen(result: Any) -> None:
    assert dataclasses.is_dataclass(result) and not isinstance(result, dict)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.endpoint = "other"


@pytest.fixture
def deployed(world: World, sagemaker_harness: Any) -> Any:
    sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION)
    return sagemaker_harness


def test_status_reads_by_attribute_and_to_dict_is_the_cli_document(deployed, capsys):
    doc = _unlabelled(_json(capsys, "status", NAME))
    st = sm_peagle.status(NAME)
    _frozen(st)
    mine = st.to_dict()
    mine.pop("age_seconds"), doc.pop("age_seconds")  # a second may pass between the two
    assert mine == doc and list(mine) == list(doc)
    for key, value in doc.items():  # every key of the document is an attribute
        assert getattr(st, key) == value, key
    sm = boto3.client("sagemaker", region_name=REGION)
    ep = sm.describe_endpoint(EndpointName=NAME)
    cfg = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    variant = cfg["ProductionVariants"][0]
    assert (st.status, st.endpoint_config) == (ep["EndpointStatus"], ep["EndpointConfigName"])
    assert (st.instance_type, st.model) == (variant["InstanceType"], variant["ModelName"])
    assert st.components is None and st.problem is None  # one model, not broken
    with pytest.warns(
        FutureWarning, match=r"EndpointStatus\['status'\] is deprecated: use .status"
    ):
        assert st["status"] == ep["EndpointStatus"]
    with pytest.warns(FutureWarning, match=r"EndpointStatus.get\('k'\) is deprecated: use .k"):
        assert st.get("k") == st.k


def test_delete_dry_run_and_delete_read_by_attribute(deployed, capsys):
    sm = boto3.client("sagemaker", region_name=REGION)
    config = sm.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    model = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0][
        "ModelName"
    ]
    doc = _unlabelled(_json(capsys, "delete", NAME, "--dry-run"))
    preview = sm_peagle.delete(NAME, dry_run=True)
    _frozen(preview)
    assert preview.to_dict() == doc and list(doc) == list(preview.to_dict())
    assert preview.would_delete == doc["would_delete"] == [NAME, config, model]
    assert preview.dry_run is True and preview.note is None and preview.deleted == []

    gone = sm_peagle.delete(NAME)
    assert sorted(gone.deleted) == sorted([NAME, config, model])
    assert gone.would_delete is None and gone.dry_run is None
    assert "would_delete" not in gone.to_dict() and "dry_run" not in gone.to_dict()
    again = _unlabelled(_json(capsys, "delete", NAME, "--yes"))
    assert again == {"endpoint": NAME, "deleted": [], "note": "already gone"}
    assert sm_peagle.delete(NAME).to_dict() == again


def test_log_events_read_by_attribute_and_to_dict_is_the_cli_document(deployed, capsys):
    deployed.seed_logs(NAME, [LINE])
    docs = _json(capsys, "logs", NAME, "--since", "5m")
    [event] = list(sm_peagle.logs(NAME, since="5m"))
    assert dataclasses.is_dataclass(event) and not isinstance(event, dict)
    assert docs == [event.to_dict()]  # each event carries its own label
    assert (event.message, event.label) == (LINE, "AWS")
    assert event.spec_decoding is not None
    assert event.spec_decoding["mean_acceptance_length"] == 3.41


def test_update_result_is_frozen_and_its_keys_are_deprecated(deployed, capsys):
    result = sm_peagle.update(NAME, k=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = "Failed"  # type: ignore[misc]
    with pytest.warns(FutureWarning, match=r"UpdateResult\['status'\] is deprecated"):
        assert result["status"] == result.status == "InService"


def test_adopt_to_dict_is_the_cli_document_action_included(world, capsys):
    """`action` was added by the CLI; now the result's own document carries it. A check's
    fix names an SDK call (`sm_peagle.update(...)`); `--json` prints the same document
    with it in the CLI's words (`peagle update ...`), as `cli_doc` renders every Text."""
    from sm_peagle.cli.faces import cli_doc

    create_jumpstart_endpoint(world.role_arn)
    doc = _unlabelled(_json(capsys, "adopt", ADOPTED, "--dry-run"))
    preview = sm_peagle.adopt(ADOPTED, dry_run=True)
    assert preview.to_dict() != doc  # the K warning's fix: Python's words, not the CLI's
    assert cli_doc(preview.to_dict()) == doc
    assert doc["action"] == "dry-run" == preview.action
    assert preview.tagged == [] and preview.dry_run is True
    adopted = sm_peagle.adopt(ADOPTED)
    assert adopted.action == "adopted" == adopted.to_dict()["action"]
    assert adopted.tagged and adopted.to_dict()["tagged"] == adopted.tagged
