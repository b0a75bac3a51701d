"""`peagle adopt` stopped partway, against the moto harness (issue 23, item 4).

- Interrupted (Ctrl-C; SIGTERM and SIGHUP raise the same) or failing while it tags, adopt
  puts every resource's tags back exactly as they were, then stops as any command does.
- Interrupted again while it puts them back, it stops, names the resources that may
  carry part of peagle's tags, and gives the one command that finishes the job.
- Killed outright (no rollback runs: simulated by a SystemExit from inside a request,
  which adopt does not catch), `peagle adopt NAME --yes` run again ends exactly as one
  uninterrupted adopt does: the same tags, no duplicate, nothing re-sent that was done.

"Exactly as one uninterrupted adopt": each test first runs one on the same endpoint, keeps
its tags, and puts the endpoint back as it was before (`reset`), so the expected tags come
from a real run, not from adopt's code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from sm_peagle.aws import AwsContext
from sm_peagle.lifecycle.adopt import adopt
from sm_peagle.lifecycle.spec_tags import encode_spec
from tests.integration.lifecycle_env import REGION, run
from tests.integration.test_adopt import (
    CONFIG,
    JS_TAGS,
    MODEL,
    NAME,
    all_tags,
    create_jumpstart_endpoint,
)

Raw = dict[str, list[tuple[str, str]]]  # resource name -> its ListTags, sorted
TAGGING = {"AddTags", "DeleteTags"}


def sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def arns() -> dict[str, str]:
    return {
        NAME: sm().describe_endpoint(EndpointName=NAME)["EndpointArn"],
        CONFIG: sm().describe_endpoint_config(EndpointConfigName=CONFIG)["EndpointConfigArn"],
        MODEL: sm().describe_model(ModelName=MODEL)["ModelArn"],
    }


def raw() -> Raw:
    """Each resource's tags as ListTags gives them (duplicates and all), sorted."""
    return {
        n: sorted((t["Key"], t["Value"]) for t in sm().list_tags(ResourceArn=a)["Tags"])
        for n, a in arns().items()
    }


def reset(to: Raw) -> None:
    """Give each resource exactly the tags `to` lists (by hand, as its owner could)."""
    for n, a in arns().items():
        keys = sorted({t["Key"] for t in sm().list_tags(ResourceArn=a)["Tags"]})
        if keys:
            sm().delete_tags(ResourceArn=a, TagKeys=keys)
        if to[n]:
            sm().add_tags(ResourceArn=a, Tags=[{"Key": k, "Value": v} for k, v in to[n]])
    assert raw() == to


def uninterrupted(capsys: pytest.CaptureFixture) -> Raw:
    """The tags one whole `adopt --yes` leaves, from the current state; then put back."""
    before = raw()
    code, _, err = run(capsys, "adopt", NAME, "--yes")
    assert code == 0, err
    after = raw()
    reset(before)
    return after


@dataclass
class Fault:
    """Raise `exc` at the `nth` request (counted over `ops`), before it is sent or after
    SageMaker answered it."""

    ops: set[str]
    nth: int
    when: str  # "before" | "after"
    exc: BaseException
    seen: int = 0
    fired: bool = False


@dataclass
class Faults:
    """Every SageMaker request of this process goes through here (BaseClient)."""

    rules: list[Fault] = field(default_factory=list)

    def add(self, ops: set[str], nth: int, when: str, exc: BaseException) -> Fault:
        fault = Fault(ops, nth, when, exc)
        self.rules.append(fault)
        return fault

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from botocore.client import BaseClient

        real = BaseClient._make_api_call

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            mine = [r for r in self.rules if operation in r.ops and not r.fired]
            for r in mine:
                r.seen += 1
            self._fire(mine, "before")
            answer = real(client, operation, params)
            self._fire(mine, "after")
            return answer

        monkeypatch.setattr(BaseClient, "_make_api_call", call)

    @staticmethod
    def _fire(rules: list[Fault], when: str) -> None:
        for r in rules:
            if r.seen == r.nth and r.when == when:
                r.fired = True
                raise r.exc


def long_tags(n: int = 12) -> list[dict[str, str]]:
    """User tags that make the spec several chunks long (hex digests do not compress)."""
    return [
        {"Key": f"note-{i}", "Value": hashlib.sha256(str(i).encode()).hexdigest()} for i in range(n)
    ]


def with_stale_peagle_tags() -> None:
    """What an earlier adopt, killed before the endpoint and of a longer spec (its owner
    has since changed the endpoint's tags), leaves on the model and config; on the
    endpoint, what an older peagle wrote (managed, no spec): adopt overwrites a value on
    the endpoint and deletes stale spec chunks on the model and config."""
    longer = encode_spec(
        {"model": "gpt-oss-20b", "tags": {t["Key"]: t["Value"] for t in long_tags()}}
    )
    assert len(longer) >= 3
    earlier = {
        "peagle:managed": "true",
        "peagle:deployment": NAME,
        "peagle:origin": "adopted",
        "peagle:version": "0.0.1",
        **longer,
    }
    a = arns()
    for n in (CONFIG, MODEL):
        sm().add_tags(ResourceArn=a[n], Tags=[{"Key": k, "Value": v} for k, v in earlier.items()])
    older = {"peagle:managed": "true", "peagle:deployment": NAME, "peagle:version": "0.0.1"}
    sm().add_tags(ResourceArn=a[NAME], Tags=[{"Key": k, "Value": v} for k, v in older.items()])


def tagging_requests(world: Any) -> list[tuple[str, str]]:
    """(operation, resource name) of each AddTags / DeleteTags adopt sent."""
    return [(op, p["ResourceArn"].rsplit("/", 1)[-1]) for op, p in world.requests if op in TAGGING]


# --- interrupted or failing: everything put back ------------------------------------------


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("nth", [1, 2, 3])
def test_an_interrupt_at_any_add_tags_puts_every_tag_back(world, capsys, monkeypatch, nth, when):
    """A fresh JumpStart endpoint: AddTags on the model, the config, the endpoint. Ctrl-C
    before one is sent, or once SageMaker answered it: every tag is as it was."""
    create_jumpstart_endpoint(world.role_arn)
    before = raw()
    faults = Faults()
    fault = faults.add({"AddTags"}, nth, when, KeyboardInterrupt())
    faults.install(monkeypatch)
    world.requests.clear()

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert fault.fired and code == 130, err
    assert err.splitlines()[-1] == "error: interrupted"
    assert "Traceback" not in err
    assert raw() == before
    sent = [("AddTags", n) for n in [MODEL, CONFIG, NAME][: nth if when == "after" else nth - 1]]
    assert [r for r in tagging_requests(world) if r[0] == "AddTags"] == sent
    # Put back, the last first: each resource whose AddTags was about to go, or went.
    order = [f"model/{MODEL}", f"endpoint-config/{CONFIG}", f"endpoint/{NAME}"][:nth][::-1]
    said = [line for line in err.splitlines() if "back as they were" in line]
    assert said == [f"put the tags of {', '.join(order)} back as they were"]


@pytest.mark.parametrize("nth", [1, 2, 3, 4, 5])
def test_an_interrupt_after_any_tag_request_puts_back_overwritten_and_deleted_tags(
    world, capsys, monkeypatch, nth
):
    """Model and config carry a longer spec (stale chunks adopt deletes), the endpoint an
    older peagle's version (adopt overwrites it): AddTags then DeleteTags on the model and
    on the config, AddTags on the endpoint. Interrupted after each, all is as before:
    the overwritten value back, the deleted chunks back, no duplicate left."""
    create_jumpstart_endpoint(world.role_arn)
    with_stale_peagle_tags()
    before = raw()
    faults = Faults()
    fault = faults.add(TAGGING, nth, "after", KeyboardInterrupt())
    faults.install(monkeypatch)
    world.requests.clear()

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert fault.fired and code == 130, err
    order = [
        ("AddTags", MODEL),
        ("DeleteTags", MODEL),
        ("AddTags", CONFIG),
        ("DeleteTags", CONFIG),
        ("AddTags", NAME),
    ]
    assert tagging_requests(world)[:nth] == order[:nth]
    assert raw() == before


def test_a_failure_while_tagging_puts_every_tag_back_and_is_one_line(world, capsys, monkeypatch):
    from botocore.exceptions import ClientError

    create_jumpstart_endpoint(world.role_arn)
    before = raw()
    denied = ClientError(
        {"Error": {"Code": "AccessDeniedException", "Message": "not allowed: sagemaker:AddTags"}},
        "AddTags",
    )
    faults = Faults()
    faults.add({"AddTags"}, 3, "before", denied)  # the endpoint's
    faults.install(monkeypatch)

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "AddTags" in errors[0], err
    assert raw() == before


def test_a_second_interrupt_stops_the_restore_and_says_how_to_finish(world, capsys, monkeypatch):
    create_jumpstart_endpoint(world.role_arn)
    expected = uninterrupted(capsys)
    faults = Faults()
    faults.add({"AddTags"}, 2, "after", KeyboardInterrupt())  # the config's landed
    # The restore starts with the config: its DeleteTags is the first one sent.
    second = faults.add({"DeleteTags"}, 1, "before", KeyboardInterrupt())
    with monkeypatch.context() as m:
        faults.install(m)
        code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert second.fired and code == 130, err
    # The error line names what may be partly peagle's and the command, for this region.
    assert err.splitlines()[-1] == (
        "error: interrupted; adopt stopped: left the tags of endpoint-config/"
        f"{CONFIG}, the tags of model/{MODEL} (fix: `peagle adopt {NAME} --yes --region "
        f"{REGION}` finishes adopting {NAME} (they may be partly peagle's))"
    )
    now = raw()
    assert now[CONFIG] == expected[CONFIG] and now[MODEL] == expected[MODEL]

    code, _, err = run(capsys, "adopt", NAME, "--yes")  # the command it gave
    assert code == 0, err
    assert raw() == expected


# --- killed: adopt again finishes ---------------------------------------------------------


def killed_adopt(monkeypatch: pytest.MonkeyPatch, ops: set[str], nth: int, when: str) -> None:
    """Run adopt and stop it dead at that request: no rollback, no message."""
    faults = Faults()
    fault = faults.add(ops, nth, when, SystemExit(137))
    with monkeypatch.context() as m:
        faults.install(m)
        with pytest.raises(SystemExit):
            adopt(AwsContext(REGION), NAME)
    assert fault.fired


def test_killed_after_the_model_and_config_adopt_again_finishes(world, capsys, monkeypatch):
    create_jumpstart_endpoint(world.role_arn)
    before = raw()
    expected = uninterrupted(capsys)
    killed_adopt(monkeypatch, {"AddTags"}, 3, "before")  # the endpoint's never sent
    now = raw()
    assert (now[MODEL], now[CONFIG], now[NAME]) == (expected[MODEL], expected[CONFIG], before[NAME])
    world.requests.clear()

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert code == 0, err
    assert raw() == expected
    # The model and config were done: only the endpoint is tagged, nothing twice.
    assert tagging_requests(world) == [("AddTags", NAME)]
    assert f"already tagged model/{MODEL}" in err and f"tagged endpoint/{NAME}" in err


def test_killed_twice_with_a_longer_spec_left_behind_adopt_again_finishes(
    world, capsys, monkeypatch
):
    """The first run, killed before the endpoint, wrote a longer spec (the endpoint had
    more user tags then) on the model and config; the owner then removed those tags; the
    second run, killed between the model's AddTags and its DeleteTags, left the new spec
    followed by the old one's extra chunks. The third run ends as one whole adopt."""
    create_jumpstart_endpoint(world.role_arn, tags=[*JS_TAGS, *long_tags()])
    killed_adopt(monkeypatch, {"AddTags"}, 3, "before")
    endpoint = arns()[NAME]
    sm().delete_tags(ResourceArn=endpoint, TagKeys=[t["Key"] for t in long_tags()])
    after_first = raw()
    # What one whole adopt leaves from here, had the first run never happened.
    pristine = {**after_first, MODEL: raw_without_peagle(MODEL), CONFIG: raw_without_peagle(CONFIG)}
    reset(pristine)
    expected = uninterrupted(capsys)
    reset(after_first)
    chunks_before = [k for k, _ in after_first[MODEL] if k.startswith("peagle:spec:")]
    chunks_after = [k for k, _ in expected[MODEL] if k.startswith("peagle:spec:")]
    assert len(chunks_before) > len(chunks_after)  # there are stale chunks to delete

    killed_adopt(monkeypatch, {"AddTags", "DeleteTags"}, 2, "before")  # the model's delete
    model_tags = all_tags()[MODEL]
    assert {k for k in model_tags if k.startswith("peagle:spec:")} == set(chunks_before)

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert code == 0, err
    # As read (the last value of a key wins): the second run's AddTags overwrote the
    # first run's values, which stock moto keeps as duplicates where AWS replaces them.
    assert all_tags() == {n: dict(tags) for n, tags in expected.items()}
    assert raw()[NAME] == expected[NAME]


def raw_without_peagle(name: str) -> list[tuple[str, str]]:
    return [(k, v) for k, v in raw()[name] if not k.startswith("peagle:")]


def test_killed_between_the_endpoints_add_and_delete_adopt_again_finishes(
    world, capsys, monkeypatch
):
    """The endpoint carries an older, longer spec's chunks without peagle:managed (its
    owner took back an endpoint peagle once deployed by removing that tag): adopting it
    sends AddTags, then DeleteTags of the extra chunks, on the endpoint too. Killed
    between the two, the endpoint carries the marker and a spec, so it looks managed;
    adopt again finishes instead of refusing it as already managed."""
    longer = encode_spec(
        {"model": "gpt-oss-20b", "tags": {t["Key"]: t["Value"] for t in long_tags()}}
    )
    old = [{"Key": k, "Value": v} for k, v in longer.items()]
    create_jumpstart_endpoint(world.role_arn, tags=JS_TAGS)
    sm().add_tags(ResourceArn=arns()[NAME], Tags=old)
    before = raw()
    expected = uninterrupted(capsys)
    assert raw() == before
    killed_adopt(monkeypatch, {"DeleteTags"}, 1, "before")  # the endpoint's, never sent
    now = raw()
    assert now[MODEL] == expected[MODEL] and now[CONFIG] == expected[CONFIG]
    assert now[NAME] != expected[NAME] and all_tags()[NAME]["peagle:managed"] == "true"
    world.requests.clear()

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert code == 0, err
    assert f"an earlier adopt of {NAME} stopped partway; finishing it" in err
    assert raw() == expected
    stale = sorted(k for k in longer if k not in dict(expected[NAME]))
    sent = [
        (op, p["ResourceArn"].rsplit("/", 1)[-1], p) for op, p in world.requests if op in TAGGING
    ]
    assert [(op, n, sorted(p.get("TagKeys", []))) for op, n, p in sent] == [
        ("DeleteTags", NAME, stale)
    ]


def test_a_whole_adopt_is_still_refused_as_already_managed(world, capsys):
    create_jumpstart_endpoint(world.role_arn)
    assert run(capsys, "adopt", NAME, "--yes")[0] == 0
    world.requests.clear()
    code, _, err = run(capsys, "adopt", NAME, "--yes")
    assert code == 2 and f"endpoint {NAME} is already managed by peagle" in err
    assert not [op for op, _ in world.requests if op in TAGGING]
