"""`decode_spec` reads the spec from `peagle:spec:*` tags, also in the window a re-tag
leaves (new chunks 0..M, then a longer old spec's chunks M+1..N, until its DeleteTags),
and reads every spec peagle has written the same as before.

The format, as every peagle since the first one writes it (the rule these tests check
against): the spec's compact key-sorted JSON, zlib-compressed (level 9), base64-encoded,
split into 256-character values `peagle:spec:0`, `peagle:spec:1`, ...
"""

from __future__ import annotations

import base64
import json
import random
import zlib
from typing import Any

import pytest

from sm_peagle.planning.spec.tags import decode_spec

PREFIX = "peagle:spec:"


def written(data: dict[str, Any], level: int = 9) -> dict[str, str]:
    """The tags the format gives `data` (built here from the rule, not by encode_spec)."""
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    text = base64.b64encode(zlib.compress(raw, level)).decode()
    return {f"{PREFIX}{i // 256}": text[i : i + 256] for i in range(0, len(text), 256)}


def text_of(tags: dict[str, str]) -> str:
    return "".join(tags[f"{PREFIX}{i}"] for i in range(len(tags)))


def spec_of_size(chunks: int, padding: int | None = None, seed: int = 0) -> dict[str, Any]:
    """A spec whose encoding takes `chunks` chunks (and ends in `padding` '=' if given)."""
    rng = random.Random(seed)
    for _ in range(20000):
        words = rng.randint(1, 60 * chunks * chunks)
        data = {
            "model": "gpt-oss-20b",
            "tags": {f"k{i}": f"{rng.getrandbits(40):x}" for i in range(words // 4)},
        }
        text = text_of(written(data))
        pad = len(text) - len(text.rstrip("="))
        if len(written(data)) == chunks and (padding is None or pad == padding):
            return data
    raise AssertionError(f"no spec of {chunks} chunks with padding {padding}")


# As deployed (peagle 0.1.0 adopting the sandbox's JumpStart-shaped endpoint): one chunk.
DEPLOYED_ONE_CHUNK = {
    "peagle:spec:0": "eNpNj0FSwzAMRe+idVyatLTgy2TURHgEtuyJFCh0cvfabNrt++9/jW5AMpfMYuBvwKKGMtFov4X"
    "AQ4q7cKbdcI24BIIOBFPjn2sq1VzMhWIuq7phf4GtewTjlOWDQ3VjYpeLceI/mutEyjPFyp+bHSwUOEvFqzpCNdc3mGO"
    "7hot4/FHPmLzvh8Px9XR+e9/3g2/CSyEMkZyizJd8df+lDrTQtEY0/qb2maxpfEKj5S8SBX/YtjsgEVkX",
}
DEPLOYED_ONE_CHUNK_DATA = {
    "endpoint": {"instance_type": "ml.g7e.2xlarge", "name": "jumpstart-gpt-oss-20b"},
    "jumpstart_config": "lmi-optimized",
    "model": "gpt-oss-20b",
    "region": "us-east-1",
    "role": "arn:aws:iam::123456789012:role/peagle-sandbox-role",
    "speculative": {"num_speculative_tokens": 3},
}
# Two chunks, as peagle 0.1.0 wrote a spec with twelve user tags.
DEPLOYED_TWO_CHUNKS = {
    "peagle:spec:0": "eNqFzd2OwiAQhuF7meNi+qNVezMNtrNsXaBEqOnG9N6XMYHtwSS+h+SZjxegHd082QDdCybrg7Q"
    "D9uHXIXRg9EG1eKhXLR8KoQArDb3fF+OifAShXBCz96Iub7AVYOYRdQT75wK8w2HRMkxPpF8IReMESqXfq4vpd6YP8w9a"
    "D10TF4NUno4CSiPKePaUekFRinVdJVOce9Mq04rojSnT/9nq8+5u+ONynW1NdGBKtMm0IToyJXrM9EgUmRI9ZXoi",
    "peagle:spec:1": "+sWUaJtpS1QxJXrO9Ez0mynRS6YXohNTotdMr0TvTLBtf+BJ7ls=",
}
DEPLOYED_TWO_CHUNKS_DATA = {
    "endpoint": {"instance_type": "ml.g6e.2xlarge", "name": "jumpstart-gpt-oss-20b"},
    "model": "gpt-oss-20b",
    "speculative": {"mode": "p-eagle", "num_speculative_tokens": 3},
    "tags": {f"team-{i}": f"value-{i}-xxx" + "abcdefghij"[i % 10] * 20 for i in range(12)},
}


def test_no_spec_tags_is_none() -> None:
    assert decode_spec({}) is None
    assert decode_spec({"peagle:managed": "true", "peagle:spec-sha256": "ab", "team": "ml"}) is None


@pytest.mark.parametrize(
    ("tags", "data"),
    [
        (DEPLOYED_ONE_CHUNK, DEPLOYED_ONE_CHUNK_DATA),
        (DEPLOYED_TWO_CHUNKS, DEPLOYED_TWO_CHUNKS_DATA),
    ],
    ids=["one-chunk", "two-chunks"],
)
def test_specs_as_deployed_decode_as_before(tags: dict[str, str], data: dict[str, Any]) -> None:
    others = {"peagle:managed": "true", "peagle:spec-sha256": "0" * 64, "team": "ml"}
    assert decode_spec({**others, **tags}) == data


@pytest.mark.parametrize("chunks", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_every_length_and_padding_of_the_format_decodes(chunks: int, padding: int) -> None:
    data = spec_of_size(chunks, padding, seed=chunks * 3 + padding)
    tags = written(data)
    assert len(tags) == chunks and text_of(tags).endswith("=" * padding)
    assert decode_spec(tags) == data
    # Tag order means nothing (ListTags' order is not the chunks'): the key's index is.
    assert decode_spec(dict(reversed(tags.items()))) == data


def test_a_last_chunk_of_exactly_256_characters_is_a_complete_spec() -> None:
    for seed in range(200):
        data = spec_of_size(2, seed=seed)
        tags = written(data)
        if len(tags[f"{PREFIX}1"]) == 256:
            break
    else:
        raise AssertionError("no spec whose encoding fills its last chunk")
    stale = written(spec_of_size(4, seed=99))
    assert decode_spec({**stale, **tags}) == data


@pytest.mark.parametrize(("new_chunks", "old_chunks"), [(1, 2), (1, 8), (2, 3), (3, 8), (7, 8)])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_trailing_stale_chunks_of_a_longer_old_spec_are_ignored(
    new_chunks: int, old_chunks: int, padding: int
) -> None:
    """The window of a re-tag: AddTags wrote the new spec's chunks over the old ones'
    keys, DeleteTags of the old spec's extra chunks has not landed yet."""
    new = spec_of_size(new_chunks, padding, seed=new_chunks + 10 * padding)
    old = spec_of_size(old_chunks, seed=old_chunks + 100)
    window = {**written(old), **written(new)}
    assert len(window) == old_chunks  # the old spec's extra chunks are still there
    assert decode_spec(window) == new
    assert decode_spec(written(old)) == old  # before the AddTags


def test_many_windows_decode_to_the_new_spec() -> None:
    rng = random.Random(7)
    for _ in range(300):
        old = {"tags": {f"k{i}": f"{rng.getrandbits(64):x}" for i in range(rng.randint(1, 70))}}
        new = {"tags": {f"k{i}": f"{rng.getrandbits(64):x}" for i in range(rng.randint(1, 70))}}
        assert decode_spec({**written(old), **written(new)}) == new


def test_another_compression_level_decodes_too() -> None:
    data = spec_of_size(2, seed=5)
    assert decode_spec(written(data, level=1)) == data


@pytest.mark.parametrize(
    "tags",
    [
        {"peagle:spec:0": "bm90IHpsaWI="},  # base64 of "not zlib"
        # A spec's first chunk alone: the stream is cut short.
        {"peagle:spec:0": DEPLOYED_TWO_CHUNKS["peagle:spec:0"]},
        {"peagle:spec:0": "!!!"},
    ],
    ids=["not-zlib", "truncated", "not-base64"],
)
def test_tags_that_hold_no_complete_spec_are_an_error(tags: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="do not hold a complete spec"):
        decode_spec(tags)
