#!/usr/bin/env python3
"""Build sm_peagle/catalog/data/published_images.json: every published SageMaker vLLM
image tag of AWS's Deep Learning Containers, one row per tag.

Maintainer script; not run in CI and not imported by the package. The inputs below
are transcribed from the `aws/deep-learning-containers` repository (path and commit of
the stored copy read are given per source); the script only derives rows from them
(floating or pinned, what a floating tag points at, which entrypoint rules an image
carries), so the derivation is reviewable and the output is deterministic.

Two tag families:

* classic: ``<vllm>-gpu-py312-<cuda>-<os>-sagemaker`` and its aliases, one data file
  per version in ``docs/src/data/vllm/<version>-gpu-sagemaker.yml``. Alias semantics
  from ``docs/vllm/versioning.md`` (legacy version): Full = pinned, Short
  (``X.Y.Z-gpu-py312``) = same version without CUDA/OS, Minor
  (``X.Y-...-sagemaker-v1``) and Minor short (``X.Y-gpu-py312``) track the latest
  patch of the minor series.
* server: ``server-sagemaker-cuda[-vMAJOR[.MINOR[.PATCH]]]`` from
  ``docs/vllm/changelog/index.md``; per ``docs/vllm/versioning.md`` the full version
  (``-vX.Y.Z``) is pinned, the minor tag (``-vX.Y``) is the latest patch of that minor,
  ``-vX`` the latest of that major and the bare tag the latest release.

Entrypoint rules (the SM_VLLM_* -> argv translation of the SageMaker entrypoint) by
image date, from the history of the DLC entrypoint: before 2026-03-17; from
2026-03-17 (commit 1c1aacc0ac); from 2026-08-19 (commit dceae13291, shipped in DLC
v2.4). An image carries the newest rules dated on or before its release.

Usage: python scripts/published_images.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sm_peagle" / "catalog" / "data" / "published_images.json"
GENERATED_BY = "scripts/published_images.py"
DLC_REPO = "aws/deep-learning-containers"

RULE_DATES = [  # (rules name, first day in force, DLC commit)
    ("2026-03-17", "2026-03-17", "1c1aacc0ac"),
    ("2026-08-19", "2026-08-19", "dceae13291"),
]
PRE = "pre-2026-03-17"

# ----------------------------------------------------------------------------- classic
# version -> (cuda, os, data-file commit read). Every file lists the same four tags:
#   X.Y.Z-gpu-py312-<cuda>-<os>-sagemaker, X.Y-gpu-py312-<cuda>-<os>-sagemaker-v1,
#   X.Y.Z-gpu-py312, X.Y-gpu-py312
# (checked per file; build_classic() re-creates and the list below records them).
CLASSIC_FILES = {
    "0.13.0": ("cu129", "ubuntu22.04", "16a70b44638e2e5f57294e5693238fe55a99d8c9"),
    "0.14.0": ("cu129", "ubuntu22.04", "92f52ffba411d4bcf44e46cb7e2c5935205953a4"),
    "0.15.1": ("cu129", "ubuntu22.04", "4d9ed5ae04b892df891c53f41384944d2bbb79e1"),
    "0.16.0": ("cu129", "ubuntu22.04", "236579ca2cf44dcce4321c83ff1671f2acd3ddb2"),
    "0.17.0": ("cu129", "ubuntu22.04", "5e6827d824b559ecb5aefc9479a03bd44912c358"),
    "0.17.1": ("cu129", "ubuntu22.04", "5e6827d824b559ecb5aefc9479a03bd44912c358"),
    "0.18.0": ("cu129", "ubuntu22.04", "9929f4e615272b8dce5b572c2c045e24e95cd809"),
    "0.18.1": ("cu129", "ubuntu22.04", "5e6827d824b559ecb5aefc9479a03bd44912c358"),
    "0.19.0": ("cu129", "ubuntu22.04", "9afe7fb775e6cf617cba3f0da88b7f0393a972c9"),
    "0.19.1": ("cu129", "ubuntu22.04", "5e002e3fb857c51c56be4040049a56a4c76759f8"),
    "0.20.0": ("cu130", "ubuntu22.04", "5e6827d824b559ecb5aefc9479a03bd44912c358"),
    # note: this file says `platform: ec2` although its tags are the -sagemaker ones
    "0.20.1": ("cu130", "ubuntu22.04", "a7ca6b054881e10177d25994e8f74d6135136181"),
    "0.20.2": ("cu130", "ubuntu22.04", "ebebb928c5b4ac2a4cb7dd878ad0ed7b3fb3101b"),
    "0.21.0": ("cu130", "ubuntu22.04", "5e6827d824b559ecb5aefc9479a03bd44912c358"),
    "0.22.0": ("cu130", "ubuntu22.04", "fb3c6f1f396f51eda40b4cbdf22f21acb4d041ca"),
    "0.22.1": ("cu130", "ubuntu22.04", "ba42b0b400df3f2e6971a170baea4d4a3193566b"),
    "0.23.0": ("cu130", "ubuntu22.04", "58a8324b0af800bb72f080a9ff5294293ac665f6"),
    "0.24.0": ("cu130", "ubuntu22.04", "f813eec61c15ee5b32e81980f2a5e71896554386"),
    "0.25.0": ("cu130", "ubuntu22.04", "559bbcd94e729c03dc6753eeaf9757f82cc33330"),
    "0.25.1": ("cu130", "ubuntu22.04", "5a49882255b166625e87883f10f5221ce9e591e9"),
    "0.26.0": ("cu130", "ubuntu22.04", "5a49882255b166625e87883f10f5221ce9e591e9"),
    "0.27.1": ("cu130", "ubuntu22.04", "559bbcd94e729c03dc6753eeaf9757f82cc33330"),
    "0.28.0": ("cu130", "ubuntu24.04", "845a7a4fb06904ea3da484deeb16d8b7c5176455"),
    "0.29.0": ("cu130", "ubuntu24.04", "218a3dfc8bebe7887411c4909f214853ac9eb182"),
    "0.30.0": ("cu130", "ubuntu24.04", "51c7d99316c33c9b50d893457cab8eae509c0b12"),
    "0.31.0": ("cu130", "ubuntu24.04", "8c7b4b1d1192adddb3d7c1715f6a268dc7b7d061"),
}
# An older duplicate data file, `docs/src/data/vllm/0.13-gpu-sagemaker.yml` (version
# "0.13", commit a5623c4c6c7e8f4d9fc38aaee2b7d6c2504aa759), lists only the full
# 0.13.0 tag; it adds no tag.

CLASSIC_NOTES = {
    "0.20.1": "its data file says `platform: ec2`, but lists the -sagemaker tags",
    "0.28.0": "first classic image on ubuntu24.04",
}

# Release dates of classic images: the dated "Release Highlights" entries of the DLC
# README.md ("[YYYY/MM/DD] vLLM vX.Y.Z ... SageMaker: `X.Y.Z-gpu-py312`"), stored copies
# read. Versions not listed there have no known date.
CLASSIC_RELEASED = {
    "0.22.0": "2026-05-30",
    "0.22.1": "2026-06-05",
    "0.23.0": "2026-06-14",
    "0.24.0": "2026-07-01",
    "0.25.0": "2026-07-13",
    "0.25.1": "2026-07-15",
    "0.26.0": "2026-07-26",
    "0.27.1": "2026-08-14",
    "0.28.0": "2026-08-26",
}
README_SOURCE = "README.md (Release Highlights), aws/deep-learning-containers"

# Rules for classic images without a known date, from their order relative to dated
# ones: the 0.16.0, 0.17.0 and 0.17.1 builds predate 2026-03-17 (DLC entrypoint
# history), so do the older 0.13.0-0.15.1; 0.18.0-0.21.0 came after 2026-03-17 and
# before 0.22.0 (2026-05-30); 0.29.0-0.31.0 came after 0.28.0 (2026-08-26).
CLASSIC_UNDATED_RULES = {
    "0.13.0": (PRE, "older than the 0.16.0-0.17.1 builds, which predate 2026-03-17"),
    "0.14.0": (PRE, "older than the 0.16.0-0.17.1 builds, which predate 2026-03-17"),
    "0.15.1": (PRE, "older than the 0.16.0-0.17.1 builds, which predate 2026-03-17"),
    "0.16.0": (PRE, "DLC entrypoint history: the 0.16.0 build predates 2026-03-17"),
    "0.17.0": (PRE, "DLC entrypoint history: the 0.17.0 build predates 2026-03-17"),
    "0.17.1": (PRE, "DLC entrypoint history: the 0.17.1 build predates 2026-03-17"),
    "0.18.0": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.18.1": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.19.0": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.19.1": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.20.0": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.20.1": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.20.2": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.21.0": ("2026-03-17", "after 2026-03-17 and before the 0.22.0 image (2026-05-30)"),
    "0.29.0": ("2026-08-19", "released after the 0.28.0 image (2026-08-26)"),
    "0.30.0": ("2026-08-19", "released after the 0.28.0 image (2026-08-26)"),
    "0.31.0": ("2026-08-19", "released after the 0.28.0 image (2026-08-26)"),
}

# ----------------------------------------------------------------------------- server
CHANGELOG = "docs/vllm/changelog/index.md"
CHANGELOG_COMMIT = "0c99ec3f514c515ec2043f8f9b691b5c7caeade1"
# release -> (date, vLLM build string as printed, vLLM source commit, CUDA)
SERVER_RELEASES = {
    "1.0.0": (
        "2026-04-25",
        "0.19.1+amzn2023.6ef1efd5",
        "6ef1efd51f11106fc44deb9e7b2f5cd1247fc37e",
        "12.9.1",
    ),
    "1.1.0": (
        "2026-04-28",
        "0.19.1+amzn2023.6ef1efd5",
        "6ef1efd51f11106fc44deb9e7b2f5cd1247fc37e",
        "12.9.1",
    ),
    "1.2.0": (
        "2026-04-30",
        "0.20.0.dev60+amzn2023.8a8c9b56",
        "8a8c9b564ef015c76cf398200b8f0891e6e51bb8",
        "12.9.1",
    ),
    "1.3.0": (
        "2026-05-12",
        "0.20.0.dev361+amzn2023.3f5bd482",
        "3f5bd482f5c1a5dbdffbbf68d624e20bb7032013",
        "12.9.1",
    ),
    "1.4.0": (
        "2026-05-22",
        "0.20.0.dev361+amzn2023.3f5bd482",
        "3f5bd482f5c1a5dbdffbbf68d624e20bb7032013",
        "12.9.1",
    ),
    "2.0.0": (
        "2026-06-05",
        "0.22.1rc0+amzn2023.6aabe221",
        "6aabe221a56052965e6bb0a95e9ec682d046a6e7",
        "13.0.2",
    ),
    "2.1.0": (
        "2026-07-02",
        "0.24.0+amzn2023.7b3d595e",
        "7b3d595eb197d714052ce296cc8b124f0dc8af31",
        "13.0.2",
    ),
    "2.2.0": (
        "2026-08-03",
        "0.26.0+amzn2023.d223c900",
        "d223c900d85224c02f2162ee2c757a769e99f519",
        "13.0.2",
    ),
    "2.3.0": (
        "2026-08-17",
        "0.27.0+amzn2023.4bdc8a78",
        "4bdc8a788d2e2ce9165d552b3d4d8b72604626bf",
        "13.0.2",
    ),
    "2.4.0": (
        "2026-08-25",
        "0.27.1+amzn2023.6adad087",
        "6adad08767583f52eb4d2122111af0bf638ed5e6",
        "13.0.2",
    ),
    "2.5.0": (
        "2026-09-23",
        "0.30.0+amzn2023.ec4a3a53",
        "ec4a3a537068db40afbc9374a67da719c8c9b964",
        "13.0.2",
    ),
}
SERVER_NOTES = {
    "2.5.0": "changelog: built from ec4a3a5, not the v0.30.0 tag (a later commit carrying "
    "the Transformers 5.17 adaptation); it still reports 0.30.0",
    "2.0.0": "vLLM 0.22.1rc0, a release candidate",
}


def rules_for_date(date: str) -> str:
    rules = PRE
    for name, start, _ in RULE_DATES:
        if date >= start:
            rules = name
    return rules


def release_version(build: str) -> str | None:
    """'0.27.1+amzn2023.x' -> '0.27.1'; dev and rc builds -> None."""
    base = build.split("+", 1)[0]
    parts = base.split(".")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        return base
    return None


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def classic_source(version: str) -> str:
    return f"docs/src/data/vllm/{version}-gpu-sagemaker.yml@{CLASSIC_FILES[version][2][:10]}"


def classic_row(
    version: str, tag: str, kind: str, floating: bool, moves_with: str | None, points_to: str | None
) -> dict:
    cuda, os_name, _ = CLASSIC_FILES[version]
    released = CLASSIC_RELEASED.get(version)
    if released is not None:
        rules = rules_for_date(released)
        basis = f"release date {released} ({README_SOURCE})"
    else:
        rules, basis = CLASSIC_UNDATED_RULES[version]
    return {
        "tag": tag,
        "family": "classic",
        "tag_kind": kind,
        "vllm_version": version,
        "vllm_build": None,
        "vllm_source_commit": None,
        "cuda": cuda,
        "os": os_name,
        "python": "py312",
        "floating": floating,
        "moves_with": moves_with,
        "points_to": points_to,
        "released": released,
        "entrypoint_rules": rules,
        "entrypoint_rules_basis": basis,
        "listed_in_source": True,
        "source": classic_source(version),
        "note": CLASSIC_NOTES.get(version),
    }


def build_classic() -> list[dict]:
    rows = []
    versions = sorted(CLASSIC_FILES, key=vkey)
    latest_in_minor: dict[str, str] = {}
    for v in versions:
        latest_in_minor[".".join(v.split(".")[:2])] = v  # ascending order: last wins
    for v in versions:
        cuda, os_name, _ = CLASSIC_FILES[v]
        minor = ".".join(v.split(".")[:2])
        rows.append(
            classic_row(v, f"{v}-gpu-py312-{cuda}-{os_name}-sagemaker", "full", False, None, None)
        )
        rows.append(classic_row(v, f"{v}-gpu-py312", "short", False, None, None))
    for minor, v in sorted(latest_in_minor.items(), key=lambda kv: vkey(kv[1])):
        cuda, os_name, _ = CLASSIC_FILES[v]
        listed_by = [x for x in versions if x.startswith(minor + ".")]
        for tag, kind in (
            (f"{minor}-gpu-py312-{cuda}-{os_name}-sagemaker-v1", "minor"),
            (f"{minor}-gpu-py312", "minor_short"),
        ):
            row = classic_row(v, tag, kind, True, "patch", v)
            if len(listed_by) > 1:
                row["note"] = (
                    "listed in the data files of "
                    + ", ".join(listed_by)
                    + f"; points to the newest, {v}"
                )
                row["source"] = ", ".join(classic_source(x) for x in listed_by)
            rows.append(row)
    return rows


def server_row(
    tag: str, kind: str, release: str, floating: bool, moves_with: str | None, listed: bool
) -> dict:
    date, build, commit, cuda_full = SERVER_RELEASES[release]
    note = SERVER_NOTES.get(release)
    if not listed:
        extra = (
            "tag form from docs/vllm/versioning.md (full version tag), not listed in the changelog"
        )
        note = f"{note}; {extra}" if note else extra
    return {
        "tag": tag,
        "family": "server",
        "tag_kind": kind,
        "vllm_version": release_version(build),
        "vllm_build": build,
        "vllm_source_commit": commit,
        "cuda": "cu" + "".join(cuda_full.split(".")[:2]),
        "os": "amzn2023",
        "python": "py312",
        "floating": floating,
        "moves_with": moves_with,
        "points_to": None if not floating else f"v{release}",
        "released": date,
        "entrypoint_rules": rules_for_date(date),
        "entrypoint_rules_basis": f"release date {date} ({CHANGELOG} v{release})",
        "listed_in_source": listed,
        "source": f"{CHANGELOG}@{CHANGELOG_COMMIT[:10]} v{release}"
        + ("" if listed else "; docs/vllm/versioning.md"),
        "note": note,
    }


def build_server() -> list[dict]:
    rows = []
    releases = sorted(SERVER_RELEASES, key=vkey)
    for r in releases:
        major, minor_, patch = r.split(".")
        rows.append(
            server_row(f"server-sagemaker-cuda-v{r}", "full_version", r, False, None, False)
        )
        # latest patch of this minor (only .0 releases are in the changelog)
        latest_patch = max((x for x in releases if x.startswith(f"{major}.{minor_}.")), key=vkey)
        if latest_patch == r:
            rows.append(
                server_row(
                    f"server-sagemaker-cuda-v{major}.{minor_}", "minor", r, True, "patch", True
                )
            )
    for major in sorted({r.split(".")[0] for r in releases}, key=int):
        latest = max((x for x in releases if x.split(".")[0] == major), key=vkey)
        rows.append(
            server_row(f"server-sagemaker-cuda-v{major}", "major", latest, True, "minor", False)
        )
    latest = max(releases, key=vkey)
    rows.append(server_row("server-sagemaker-cuda", "base", latest, True, "any", False))
    for row in rows:
        if row["tag_kind"] in ("major", "base"):
            row["listed_in_source"] = False
            row["note"] = (
                "tag form from docs/vllm/versioning.md (major / rolling alias); "
                + f"points to the newest matching release in the changelog, v{row['points_to'][1:]}"
            )
            row["source"] = f"docs/vllm/versioning.md; {CHANGELOG}@{CHANGELOG_COMMIT[:10]}"
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    rows = build_classic() + build_server()
    tags = [r["tag"] for r in rows]
    assert len(tags) == len(set(tags)), "duplicate tag"
    doc = {
        "generated_by": GENERATED_BY,
        "repository": DLC_REPO,
        "image_uri": "<account>.dkr.ecr.<region>.amazonaws.com/vllm:<tag>",
        "entrypoint_rules": {
            PRE: {"from": None, "commit": None},
            **{name: {"from": start, "commit": commit} for name, start, commit in RULE_DATES},
        },
        "row_keys": sorted(rows[0]),
        "images": sorted(rows, key=lambda r: (r["family"], r["tag"])),
    }
    text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
