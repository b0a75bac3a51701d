"""Inspect a drafter head, local or on S3, without reading the tensors.

`inspect_drafter` is the entry point for either kind of source. A local directory goes
to `readers.inspect_local`; an s3://bucket/prefix/ is read here by ranged GETs of the
safetensors headers, through the S3 client the caller passes (the side-effect layers make
it: drafter/ imports neither `sm_peagle.aws` nor boto3/botocore, a test holds that). It
raises `SpecError` only when the source itself cannot be read (no such directory,
malformed URI, no S3 access).
"""

from __future__ import annotations

from typing import Any

from sm_peagle.drafter.inspection import DrafterInspection, parse_s3_uri
from sm_peagle.drafter.readers import HeaderReader, inspect_local
from sm_peagle.drafter.safetensors_header import ByteCounter, SafetensorsHeader, read_s3_header
from sm_peagle.errors import Call, SpecError, text

__all__ = ["S3Reader", "inspect_drafter"]


def inspect_drafter(
    source: str, *, s3_client: Any = None, counter: ByteCounter | None = None
) -> DrafterInspection:
    """Inspect a local drafter directory or s3://bucket/prefix/ (headers only, never tensors)."""
    if source.startswith("s3://"):
        return S3Reader(source, s3_client, counter).run()
    return inspect_local(source)


class S3Reader(HeaderReader):
    def __init__(self, uri: str, client: Any, counter: ByteCounter | None) -> None:
        self.bucket, self.prefix = parse_s3_uri(uri)
        super().__init__(f"s3://{self.bucket}/{self.prefix}")
        if client is None:  # a programming error: the SDK always passes its client
            raise TypeError("inspecting an s3:// head needs the s3_client to read it with")
        self.client = client
        self.counter = counter if counter is not None else ByteCounter()

    def run(self) -> DrafterInspection:
        ins = super().run()
        ins.bytes_read = self.counter.total
        return ins

    def list_files(self) -> dict[str, int]:
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
        except Exception as exc:
            if not _refused(exc):  # a network error is not bad input: the CLI says exit 1
                raise
            raise SpecError(f"cannot list {self.ins.source}: {exc}") from None
        if not sizes and not self.ins.folder_keys:
            raise SpecError(
                f"no objects under {self.ins.source}",
                remedy=text(
                    "push the drafter first: {push}", push=Call("drafter_push", "DIR", "S3_URI")
                ),
            )
        return sizes

    def read_small(self, name: str) -> bytes:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"]
        except Exception as exc:
            if not _refused(exc):
                raise
            raise SpecError(f"cannot read {self.ins.source}{name}: {exc}") from None
        with body:
            return body.read()

    def read_header(self, name: str) -> SafetensorsHeader:
        try:
            return read_s3_header(
                self.client,
                self.bucket,
                self.prefix + name,
                name=name,
                file_size=self.sizes.get(name),
                counter=self.counter,
            )
        except Exception as exc:
            if not _refused(exc):
                raise
            raise SpecError(f"cannot read {self.ins.source}{name}: {exc}") from None


def _refused(exc: BaseException) -> bool:
    """S3 answered with an error (botocore's ClientError: no such bucket, AccessDenied),
    recognised by the `response` document it carries, so drafter/ never imports botocore.
    A network failure (no answer at all) carries none and propagates."""
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and "Error" in response
