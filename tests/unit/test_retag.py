"""`retag` (lifecycle/retag.py): add or overwrite what is wanted first, then delete only the
caller's keys that are no longer wanted, so that at every request boundary the resource's
spec tags decode to the old spec or the new one, never to nothing or garbage.

Against a fake SageMaker tag store with both behaviours: AWS's (AddTags overwrites an
existing key) and stock moto's (AddTags appends a duplicate; ListTags lists both, peagle's
`tag_dict` keeps the last; DeleteTags removes every duplicate). tests/integration/
test_retag_moto.py checks the same on moto itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from sm_peagle.lifecycle.retag import retag
from sm_peagle.lifecycle.spec_tags import decode_spec, encode_spec, tag_dict

ARN = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/ep"


class TagStore:
    """One resource's tags behind the three tag operations; records each request and the
    tags as read after it (the boundaries a kill could land on)."""

    def __init__(self, tags: dict[str, str], appends: bool) -> None:
        self.tags = [{"Key": k, "Value": v} for k, v in tags.items()]
        self.appends = appends  # stock moto: AddTags of an existing key adds a duplicate
        self.requests: list[tuple[str, Any]] = []
        self.boundaries: list[dict[str, str]] = [self.read()]

    def read(self) -> dict[str, str]:
        return tag_dict(self.tags)

    def list_tags(self, ResourceArn: str) -> dict[str, Any]:
        assert ResourceArn == ARN
        self.requests.append(("ListTags", None))
        return {"Tags": [dict(t) for t in self.tags]}

    def add_tags(self, ResourceArn: str, Tags: list[dict[str, str]]) -> None:
        assert ResourceArn == ARN
        self.requests.append(("AddTags", {t["Key"]: t["Value"] for t in Tags}))
        for t in Tags:
            if not self.appends:
                self.tags = [x for x in self.tags if x["Key"] != t["Key"]]
            self.tags.append(dict(t))
        self.boundaries.append(self.read())

    def delete_tags(self, ResourceArn: str, TagKeys: list[str]) -> None:
        assert ResourceArn == ARN
        self.requests.append(("DeleteTags", sorted(TagKeys)))
        self.tags = [t for t in self.tags if t["Key"] not in TagKeys]
        self.boundaries.append(self.read())


def peagle(key: str) -> bool:
    return key.startswith("peagle:")


def spec(words: int, k: int = 3) -> dict[str, Any]:
    """A spec whose encoding grows with `words` (8 words: one chunk; 120: several)."""
    return {
        "model": "gpt-oss-20b",
        "speculative": {"num_speculative_tokens": k},
        "tags": {f"t{i}": f"{(i * 2654435761) % 2**32:08x}{i}" for i in range(words)},
    }


def tags_for(data: dict[str, Any], version: str) -> dict[str, str]:
    return {"peagle:managed": "true", "peagle:version": version, **encode_spec(data)}


SIZES = [(8, 120), (120, 8), (120, 121), (8, 8)]


@pytest.mark.parametrize("appends", [False, True], ids=["aws", "stock-moto"])
@pytest.mark.parametrize(("old_words", "new_words"), SIZES)
def test_at_every_request_boundary_the_spec_is_the_old_or_the_new(
    appends: bool, old_words: int, new_words: int
) -> None:
    old, new = spec(old_words, k=3), spec(new_words, k=7)
    store = TagStore({**tags_for(old, "0.1"), "team": "ml"}, appends)
    wanted = tags_for(new, "0.2")

    retag(store, ARN, wanted, peagle)

    seen = [decode_spec(b) for b in store.boundaries]
    assert seen[0] == old and seen[-1] == new
    assert all(s in (old, new) for s in seen), seen
    # Once the new spec is read, it stays read (no flip back to the old one).
    first_new = seen.index(new)
    assert all(s == new for s in seen[first_new:])
    final = store.read()
    assert final == {**wanted, "team": "ml"}


@pytest.mark.parametrize("appends", [False, True], ids=["aws", "stock-moto"])
def test_it_adds_first_then_deletes_only_the_callers_keys_no_longer_wanted(appends: bool) -> None:
    old, new = spec(120), spec(8)
    old_tags = tags_for(old, "0.1")
    assert len(encode_spec(old)) > len(encode_spec(new)) == 1
    current = {**old_tags, "team": "ml", "peagle:operation": "op-1", "cost": "a"}
    store = TagStore(current, appends)
    wanted = {**tags_for(new, "0.2"), "cost": "b"}

    retag(store, ARN, wanted, lambda k: peagle(k) and k != "peagle:operation")

    ops = [op for op, _ in store.requests]
    assert ops == ["ListTags", "AddTags", "DeleteTags"]
    added, deleted = store.requests[1][1], store.requests[2][1]
    # Only what changes is sent: peagle:managed is already "true".
    assert added == {k: v for k, v in wanted.items() if current.get(k) != v}
    assert "peagle:managed" not in added
    # "cost" is not the caller's, yet wanted: written. "team" is neither: untouched.
    assert added["cost"] == "b"
    stale_chunks = [f"peagle:spec:{i}" for i in range(1, len(encode_spec(old)))]
    assert deleted == sorted(stale_chunks)
    assert store.read() == {**wanted, "team": "ml", "peagle:operation": "op-1"}


def test_nothing_is_sent_when_the_tags_already_match() -> None:
    wanted = tags_for(spec(8), "0.2")
    store = TagStore({**wanted, "team": "ml"}, appends=False)
    retag(store, ARN, wanted, peagle, current=store.read())
    assert store.requests == []
    retag(store, ARN, wanted, peagle)
    assert store.requests == [("ListTags", None)]


def test_current_saves_the_list_tags_request() -> None:
    store = TagStore(tags_for(spec(8), "0.1"), appends=False)
    retag(store, ARN, tags_for(spec(9), "0.2"), peagle, current=store.read())
    assert [op for op, _ in store.requests] == ["AddTags"]


@pytest.mark.parametrize("appends", [False, True], ids=["aws", "stock-moto"])
@pytest.mark.parametrize("stop_after", [1, 2])
def test_running_it_again_after_a_kill_ends_as_one_uninterrupted_run(
    appends: bool, stop_after: int
) -> None:
    """Killed after its first (or second) request, run again: the same final tags."""
    old, new = spec(120, k=3), spec(8, k=7)
    start = {**tags_for(old, "0.1"), "team": "ml"}
    wanted = tags_for(new, "0.2")
    whole = TagStore(start, appends)
    retag(whole, ARN, wanted, peagle, current=whole.read())

    class Killed(BaseException):
        pass

    cut = TagStore(start, appends)
    real_add, real_delete = cut.add_tags, cut.delete_tags
    sent = 0

    def counted(real: Any) -> Any:
        def call(**kw: Any) -> None:
            nonlocal sent
            real(**kw)
            sent += 1
            if sent == stop_after:
                raise Killed

        return call

    cut.add_tags, cut.delete_tags = counted(real_add), counted(real_delete)  # type: ignore[method-assign]
    with pytest.raises(Killed):
        retag(cut, ARN, wanted, peagle, current=cut.read())
    cut.add_tags, cut.delete_tags = real_add, real_delete  # type: ignore[method-assign]
    retag(cut, ARN, wanted, peagle)
    assert cut.read() == whole.read() == {**wanted, "team": "ml"}
