"""Re-tag one SageMaker resource so that it never, between two requests, lacks a valid
spec: add (or overwrite) the wanted tags first, then delete only what is no longer wanted.

Why this order: `peagle update`, `apply`, `diff` and `bench` read the spec back from the
`peagle:spec:*` tags, and a process can be killed between any two requests. Deleting first
(what peagle used to do, because stock moto appends a duplicate on an AddTags of an existing
key where AWS overwrites) leaves a window with no spec, or none of peagle's tags at all.
Adding first leaves, at worst, the new chunks 0..M followed by the old spec's chunks
M+1..N until the DeleteTags lands: `decode_spec` stops at the first complete stream, so
that window reads as the new spec. On stock moto, the added value comes after the old
one in ListTags, and `tag_dict` keeps the last value: the new spec there too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .spec_tags import tag_dict

__all__ = ["retag"]


def retag(
    sm: Any,
    arn: str,
    wanted: dict[str, str],
    owned: Callable[[str], bool],
    *,
    current: dict[str, str] | None = None,
) -> None:
    """Give the resource `arn` the tags `wanted`, and remove the caller's others.

    Contract (what a caller may rely on):
    - at most two mutating requests, in this order: one AddTags of every key of `wanted`
      whose current value differs (new keys and overwritten values), then one DeleteTags of
      every current key for which `owned(key)` is true and that `wanted` lacks;
    - a key neither in `wanted` nor `owned` (a tag someone else set) is never touched;
    - a key in `wanted` is written whatever `owned` says of it;
    - nothing is sent when the tags already match; the final tags are the same whatever
      they were before (so running it again after an interruption finishes the job);
    - `current` is the resource's tags as the caller just read them ({key: value}, as
      `tag_dict` of ListTags gives them): pass it to save the ListTags this would send;
    - errors (botocore's ClientError) and KeyboardInterrupt propagate; a caller that
      must undo calls `retag` again with the tags it saw before.

    `peagle update`'s `retag_endpoint(lc, arn, tags)` is then (`keep`: keys the endpoint
    keeps whatever the spec, such as the operation that created it)::

        current = tag_dict(lc.sm.list_tags(ResourceArn=arn).get("Tags", []))
        old_user = set(((decode_spec(current) or {}).get("tags") or {}).keys())
        wanted = {t["Key"]: t["Value"] for t in tags if t["Key"] not in keep}
        retag(lc.sm, arn, wanted,
              lambda k: (k.startswith("peagle:") or k in old_user) and k not in keep,
              current=current)

    The caller checks SageMaker's 50 tags per resource: between the two requests the
    resource carries the union of its current and wanted keys.
    """
    if current is None:
        current = tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))
    changed = [{"Key": k, "Value": v} for k, v in wanted.items() if current.get(k) != v]
    if changed:
        sm.add_tags(ResourceArn=arn, Tags=changed)
    stale = [k for k in current if owned(k) and k not in wanted]
    if stale:
        sm.delete_tags(ResourceArn=arn, TagKeys=stale)
