"""Read what vLLM will read from a drafter directory (local or S3), without the tensors.

Inspection only records facts and the problems met while reading them; judging them
against a target model and vLLM version is `check.py`'s job. It raises `SpecError` only
when the source itself cannot be read (no such directory, malformed URI, no S3 access).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sm_peagle.drafter.safetensors_header import (
    ByteCounter,
    HeaderError,
    SafetensorsHeader,
    read_local_header,
    read_s3_header,
)
from sm_peagle.errors import SpecError
from sm_peagle.planning.vllm_versions import (
    NEWEST_CHECKED,
    PARALLEL_DRAFTING_MIN,
    VllmVersion,
    mask_token_keys,
)

__all__ = [
    "CONFIG",
    "INDEX",
    "SINGLE",
    "DrafterInspection",
    "FileEntry",
    "Problem",
    "all_mask_token_keys",
    "find_tensor",
    "inspect_drafter",
    "name_problems",
    "parse_s3_uri",
]

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<prefix>.*))?$")
# Names SageMaker can mount unambiguously as file paths (see push.py).
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._\-/]+$")


@dataclass(frozen=True)
class FileEntry:
    name: str
    size: int


@dataclass(frozen=True)
class Problem:
    """Something that stopped inspection reading a fact; kind is one of:
    missing_config, bad_config, missing_weights, bad_index, missing_shard, corrupt_header."""

    kind: str
    file: str
    message: str


@dataclass
class DrafterInspection:
    source: str
    files: list[FileEntry] = field(default_factory=list)
    config: dict[str, Any] | None = None
    architecture: str | None = None
    hidden_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    vocab_size: int | None = None
    draft_vocab_size: int | None = None  # as read, defaulted to vocab_size like vLLM does
    target_hidden_size: int | None = None
    mask_token_key: str | None = None  # first mask-token key found (any vLLM version)
    mask_token_value: Any = None
    mask_tokens: dict[str, Any] = field(default_factory=dict)  # every mask-token key found
    weight_files: list[str] = field(default_factory=list)
    mask_hidden: bool = False
    mask_hidden_shape: list[int] | None = None
    fc_name: str | None = None
    fc_shape: list[int] | None = None
    d2t: bool = False
    d2t_shape: list[int] | None = None
    tensor_count: int = 0
    total_tensor_bytes: int = 0
    dtypes: list[str] = field(default_factory=list)
    parameter_count: int = 0
    folder_keys: list[str] = field(default_factory=list)
    bad_names: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    bytes_read: int = 0  # bytes fetched from safetensors files (headers only)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["mask_token"] = (
            {"key": self.mask_token_key, "value": self.mask_token_value}
            if self.mask_token_key
            else None
        )
        del d["mask_token_key"], d["mask_token_value"]
        return d

    def problem(self, *kinds: str) -> Problem | None:
        return next((p for p in self.problems if p.kind in kinds), None)


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """('bucket', 'prefix/') from s3://bucket/prefix; the prefix always ends with '/' or is ''."""
    m = _S3_URI.match(uri.strip())
    if not m:
        raise SpecError(f"malformed S3 URI {uri!r}", remedy="use s3://bucket/prefix/")
    prefix = (m.group("prefix") or "").strip("/")
    if "//" in prefix:
        raise SpecError(
            f"malformed S3 URI {uri!r}: empty path segment", remedy="use s3://bucket/prefix/"
        )
    return m.group("bucket"), (prefix + "/" if prefix else "")


def all_mask_token_keys() -> tuple[str, ...]:
    """Union of the mask-token keys of every checked vLLM version, oldest key first."""
    keys: list[str] = []
    for minor in range(PARALLEL_DRAFTING_MIN.parts[1], NEWEST_CHECKED.parts[1] + 1):
        for k in mask_token_keys(VllmVersion(f"0.{minor}.0")):
            if k not in keys:
                keys.append(k)
    return tuple(keys)


def lookup(config: dict[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def name_problems(names: list[str]) -> list[str]:
    """Relative names that would mount ambiguously under /opt/ml/additional-model-data-sources."""
    bad: list[str] = []
    seen: dict[str, str] = {}
    for n in names:
        if (
            n.startswith("/")
            or "\\" in n
            or ".." in n
            or not _SAFE_NAME.match(n)
            or "//" in n
            or n.endswith("/")
        ):
            bad.append(n)
            continue
        other = seen.setdefault(n.lower(), n)
        if other != n:
            bad.append(f"{n} (same as {other} ignoring case)")
    return bad


def find_tensor(tensors: dict[str, Any], suffix: str) -> str | None:
    """Name of the tensor called `suffix`, possibly prefixed (model.fc.weight for fc.weight)."""
    if suffix in tensors:
        return suffix
    return next((n for n in sorted(tensors) if n.endswith("." + suffix)), None)


def inspect_drafter(
    source: str, *, s3_client: Any = None, counter: ByteCounter | None = None
) -> DrafterInspection:
    """Inspect a local drafter directory or s3://bucket/prefix/ (headers only, never tensors)."""
    if source.startswith("s3://"):
        return _S3Reader(source, s3_client, counter).run()
    root = Path(source).expanduser()
    if not root.exists():
        raise SpecError(f"drafter directory {source} does not exist")
    if not root.is_dir():
        raise SpecError(
            f"drafter source {source} is not a directory",
            remedy="pass the directory holding config.json and *.safetensors",
        )
    return _LocalReader(root).run()


class _Reader:
    """Shared logic; subclasses say how to list, read a small file and read a header."""

    def __init__(self, source: str) -> None:
        self.ins = DrafterInspection(source=source)
        self.sizes: dict[str, int] = {}

    def list_files(self) -> dict[str, int]:
        raise NotImplementedError

    def read_small(self, name: str) -> bytes:
        raise NotImplementedError

    def read_header(self, name: str) -> SafetensorsHeader:
        raise NotImplementedError

    def run(self) -> DrafterInspection:
        ins = self.ins
        self.sizes = self.list_files()
        ins.files = [FileEntry(n, s) for n, s in sorted(self.sizes.items())]
        ins.bad_names = name_problems([n for n in sorted(self.sizes) if not _hidden(n)])
        self._read_config()
        self._read_weights()
        return ins

    def _read_json(self, name: str, kind: str) -> Any:
        try:
            return json.loads(self.read_small(name).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.ins.problems.append(Problem(kind, name, f"{name} is not valid JSON ({exc})"))
            return None

    def _read_config(self) -> None:
        ins = self.ins
        if CONFIG not in self.sizes:
            ins.problems.append(Problem("missing_config", CONFIG, "config.json not found"))
            return
        cfg = self._read_json(CONFIG, "bad_config")
        if cfg is None:
            return
        if not isinstance(cfg, dict):
            ins.problems.append(Problem("bad_config", CONFIG, "config.json is not a JSON object"))
            return
        ins.config = cfg
        archs = cfg.get("architectures")
        if isinstance(archs, list) and archs:
            ins.architecture = str(archs[0])
        for key in (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "vocab_size",
            "target_hidden_size",
        ):
            val = cfg.get(key)
            setattr(ins, key, val if _is_int(val) else None)
        dv = cfg.get("draft_vocab_size")
        ins.draft_vocab_size = dv if _is_int(dv) else ins.vocab_size
        for key in all_mask_token_keys():
            val = lookup(cfg, key)
            if val is not None:
                ins.mask_tokens[key] = val
        if ins.mask_tokens:
            ins.mask_token_key, ins.mask_token_value = next(iter(ins.mask_tokens.items()))

    def _weight_file_names(self) -> list[str]:
        ins = self.ins
        if INDEX in self.sizes:
            index = self._read_json(INDEX, "bad_index")
            wmap = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(wmap, dict):
                if index is not None:
                    ins.problems.append(Problem("bad_index", INDEX, f"{INDEX} has no weight_map"))
                return []
            shards = sorted({str(v) for v in wmap.values()})
            for s in shards:
                if s not in self.sizes:
                    ins.problems.append(
                        Problem("missing_shard", s, f"{INDEX} lists shard {s}, which is missing")
                    )
            return [s for s in shards if s in self.sizes]
        if SINGLE in self.sizes:
            return [SINGLE]
        # vLLM falls back to every top-level *.safetensors file when there is no index.
        return sorted(n for n in self.sizes if n.endswith(".safetensors") and "/" not in n)

    def _read_weights(self) -> None:
        ins = self.ins
        names = self._weight_file_names()
        if not names and not ins.problem("bad_index", "missing_shard"):
            ins.problems.append(
                Problem(
                    "missing_weights", SINGLE, "no model.safetensors, index or *.safetensors found"
                )
            )
        tensors: dict[str, Any] = {}
        for name in names:
            try:
                header = self.read_header(name)
            except HeaderError as exc:
                ins.problems.append(Problem("corrupt_header", name, str(exc)))
                continue
            ins.weight_files.append(name)
            tensors.update(header.tensors)
        ins.tensor_count = len(tensors)
        ins.total_tensor_bytes = sum(t.nbytes for t in tensors.values())
        ins.parameter_count = sum(t.numel for t in tensors.values())
        ins.dtypes = sorted({t.dtype for t in tensors.values()})
        if (mh := find_tensor(tensors, "mask_hidden")) is not None:
            ins.mask_hidden, ins.mask_hidden_shape = True, list(tensors[mh].shape)
        if (fc := find_tensor(tensors, "fc.weight")) is not None:
            ins.fc_name, ins.fc_shape = fc, list(tensors[fc].shape)
        if (d2t := find_tensor(tensors, "d2t")) is not None:
            ins.d2t, ins.d2t_shape = True, list(tensors[d2t].shape)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _hidden(name: str) -> bool:
    return any(part.startswith(".") for part in name.split("/"))


class _LocalReader(_Reader):
    def __init__(self, root: Path) -> None:
        super().__init__(str(root))
        self.root = root

    def list_files(self) -> dict[str, int]:
        try:
            return {
                p.relative_to(self.root).as_posix(): p.stat().st_size
                for p in self.root.rglob("*")
                if p.is_file()
            }
        except OSError as exc:
            raise SpecError(f"cannot read drafter directory {self.root}: {exc}") from None

    def read_small(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as exc:
            raise SpecError(f"cannot read {self.root / name}: {exc}") from None

    def read_header(self, name: str) -> SafetensorsHeader:
        try:
            return read_local_header(self.root / name)
        except OSError as exc:
            raise SpecError(f"cannot read {self.root / name}: {exc}") from None


class _S3Reader(_Reader):
    def __init__(self, uri: str, client: Any, counter: ByteCounter | None) -> None:
        self.bucket, self.prefix = parse_s3_uri(uri)
        super().__init__(f"s3://{self.bucket}/{self.prefix}")
        if client is None:
            from sm_peagle.aws import AwsContext  # lazy: boto3 costs ~0.3 s to import

            ctx = AwsContext()
            client = ctx.client("s3", region=ctx.session.region_name or "us-east-1")
        self.client = client
        self.counter = counter if counter is not None else ByteCounter()

    def run(self) -> DrafterInspection:
        ins = super().run()
        ins.bytes_read = self.counter.total
        return ins

    def list_files(self) -> dict[str, int]:
        from botocore.exceptions import BotoCoreError, ClientError

        sizes: dict[str, int] = {}
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    key, size = obj["Key"], obj["Size"]
                    if key.endswith("/"):
                        # Console "Create folder" objects: mounted as junk, break the channel.
                        self.ins.folder_keys.append(key)
                    else:
                        sizes[key[len(self.prefix) :]] = size
        except (ClientError, BotoCoreError) as exc:
            raise SpecError(f"cannot list {self.ins.source}: {exc}") from None
        if not sizes and not self.ins.folder_keys:
            raise SpecError(
                f"no objects under {self.ins.source}",
                remedy="push the drafter first: peagle drafter push DIR S3_URI",
            )
        return sizes

    def read_small(self, name: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"]
        except ClientError as exc:
            raise SpecError(f"cannot read {self.ins.source}{name}: {exc}") from None
        with body:
            return body.read()

    def read_header(self, name: str) -> SafetensorsHeader:
        from botocore.exceptions import ClientError

        try:
            return read_s3_header(
                self.client,
                self.bucket,
                self.prefix + name,
                name=name,
                file_size=self.sizes.get(name),
                counter=self.counter,
            )
        except ClientError as exc:
            raise SpecError(f"cannot read {self.ins.source}{name}: {exc}") from None
