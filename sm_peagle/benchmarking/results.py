"""The results document, `"schema": "peagle.bench/3"` (see docs/bench-schema.md and the JSON
Schema docs/peagle.bench-3.schema.json that the tests validate every document against).
`peagle.bench/1` and `/2` documents (docs/peagle.bench-1.schema.json, -2) are still read.

Two kinds share the schema:

- ``kind: "bench"``: one endpoint (one configuration), a list of levels;
- ``kind: "sweep"``: several bench documents (``runs``) plus the comparison table and the K
  recommendation.

`recommend --results-dir DIR` reads the top-level ``instance_type`` and
``levels[].output_tokens_per_s`` of bench documents; those names must never change within
any version. Every document says where its numbers came from (provenance) and carries the
product's one label of the engine that produced them (`sm_peagle.settings`): `AWS`,
`SANDBOX (SIMULATED)` or `SANDBOX (vllm X.Y.Z, CPU, tiny model)`. Dollar figures per token
are computed only for AWS runs; elsewhere the instance price is kept for planning and
labelled as the price of the instance one would rent, not of this run.

`"simulated": true` is carried by the SIMULATED engine's documents only (the sandbox's
made-up tokens). A real engine's document (AWS, or the sandbox's real vLLM on CPU) has no
`simulated` key: its `label` and `engine` name the engine that answered. Up to
`peagle.bench/2` every sandbox document said `simulated: true`, the real engine's too;
`is_simulated()` and `from_sandbox()` read every version.
"""

from __future__ import annotations

import json
import os
import platform
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import SpecError

__all__ = [
    "SCHEMA",
    "bench_document",
    "client_info",
    "iso",
    "is_sandbox",
    "label_of",
    "is_aws_label",
    "is_simulated",
    "from_sandbox",
    "simulated_marker",
    "provenance",
    "load_document",
    "provenance_of",
    "save_document",
]

SCHEMA = "peagle.bench/3"
LABELLED = ("peagle.bench/2", SCHEMA)  # versions whose `label` is the product's
READABLE = ("peagle.bench/1", *LABELLED)  # `report`, `recommend` and `tune-k` read them all
SIMULATED = "SIMULATED"
MEASURED = "MEASURED"
PRICE_NOTE = "price of the instance you would rent, not of this run"


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def is_sandbox() -> bool:
    """The CLI points at the local sandbox (peagle --sandbox / `peagle sandbox env`)."""
    from .. import settings

    return bool(settings.sandbox_url())


def label_of(simulated: bool, sandbox: dict[str, Any] | None = None) -> str:
    """The product's label of what produced the numbers (settings.label_for_engine): the
    sandbox's engine (`SANDBOX (SIMULATED)`, `SANDBOX (vllm X.Y.Z, CPU, tiny model)`), or
    `AWS`. A run that saw the sandbox's simulated marker but has no sandbox record is
    SANDBOX (SIMULATED): never labelled AWS."""
    from .. import settings

    if sandbox is not None:
        return settings.label_for_engine(sandbox.get("engine"))
    return settings.SANDBOX_SIMULATED if simulated else settings.AWS


def is_aws_label(label: Any) -> bool:
    from .. import settings

    return label == settings.AWS or label == MEASURED  # MEASURED: peagle.bench/1's word


def simulated_marker(label: str) -> dict[str, bool]:
    """The `simulated` key a document (bench, sweep, race) with this label carries:
    `{"simulated": True}` for the SIMULATED engine's numbers, nothing for a real engine's
    (AWS, or the sandbox's vLLM), whose label and `engine` say which one answered."""
    from .. import settings

    return {"simulated": True} if label == settings.SANDBOX_SIMULATED else {}


def is_simulated(doc: dict[str, Any]) -> bool:
    """Whether the SIMULATED engine made the numbers up, for every version: up to /2 the
    sandbox's real engine said `simulated: true` too, and named itself (`vllm ...`) in
    `engine`."""
    return bool(doc.get("simulated")) and not str(doc.get("engine") or "").startswith("vllm ")


def from_sandbox(doc: dict[str, Any]) -> bool:
    """Whether the numbers came from the sandbox (either engine), not AWS, for every
    version: /3 by its label (its real engine carries no `simulated`), /2 and /1 by their
    `simulated` flag too. The one rule `recommend` reads too (`measured_on_aws`: planning
    sits below this package)."""
    from ..planning.recommend import measured_on_aws

    return not measured_on_aws(doc)


def provenance(doc: dict[str, Any]) -> str:
    """What a human header says produced a document: its label (peagle.bench/2, /3), or for a
    peagle.bench/1 document of the sandbox's real engine `SANDBOX, vllm 0.31.0 (CPU, tiny
    model)`, which that version's SIMULATED/MEASURED label alone cannot say."""
    engine = str(doc.get("engine") or "")
    label = str(doc.get("label"))
    if label in (SIMULATED, MEASURED) and doc.get("simulated") and engine.startswith("vllm "):
        return f"SANDBOX, {engine}"
    return label


def engine_of(simulated: bool, sandbox: dict[str, Any] | None, version: str | None) -> str:
    """Which engine produced the numbers: the sandbox's (`SIMULATED`, or the real engine,
    e.g. `vllm 0.31.0 (CPU, tiny model)`), else the endpoint's vLLM on SageMaker."""
    engine = str((sandbox or {}).get("engine") or "")
    if engine.lower() == "simulated" or (simulated and not engine):
        return SIMULATED
    if engine:
        return engine
    return f"vllm {version} on SageMaker" if version else "SageMaker"


def client_info() -> dict[str, Any]:
    import botocore

    from ..version import __version__

    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "peagle_version": __version__,
        "botocore_version": botocore.__version__,
    }


def provenance_of(status: dict[str, Any]) -> dict[str, Any]:
    """What the endpoint runs, read back from SageMaker (inventory.endpoint_status)."""
    from ..vllm.versions import parse_image_tag

    image = status.get("image")
    version = parse_image_tag(image)[0] if image else None
    return {
        "endpoint": status.get("endpoint"),
        "instance_type": status.get("instance_type"),
        "instance_count": status.get("instance_count"),
        "usd_per_hour": status.get("usd_per_hour"),
        "image": image,
        "vllm_version": str(version) if version else None,
        "mode": status.get("mode"),
        "k": status.get("k"),
        "speculative_config": status.get("speculative_config"),
    }


def bench_document(
    *,
    provenance: dict[str, Any],
    dataset: dict[str, Any],
    load: dict[str, Any],
    levels: list[dict[str, Any]],
    started_at: float,
    ended_at: float,
    simulated: bool,
    sandbox: dict[str, Any] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    label = label_of(simulated, sandbox)
    notes = list(notes or [])
    provenance = dict(provenance)
    if not is_aws_label(label):
        # Not an AWS run: no cost per token (CPU tok/s times a GPU price means nothing).
        for lv in levels:
            lv["usd_per_million_output_tokens"] = None
        provenance["usd_per_hour_note"] = PRICE_NOTE
    engine = engine_of(simulated, sandbox, provenance.get("vllm_version"))
    # `simulated` (the argument) is "talked to the sandbox", either engine; the document
    # says `simulated` only of the SIMULATED engine (simulated_marker).
    if simulated and engine.startswith("vllm "):  # the sandbox's real engine
        notes.insert(
            0,
            f"SANDBOX, real engine: tokens, usage and acceptance come from {engine} on this "
            "machine; not measured on AWS, and the timings say nothing about GPU performance",
        )
    elif simulated:
        notes.insert(
            0,
            "SIMULATED: the local peagle sandbox made these tokens and timings up "
            "(peagle_sandbox.engine); they say nothing about real GPU performance",
        )
    return {
        "schema": SCHEMA,
        "kind": "bench",
        "metric_definitions": METRIC_DEFINITIONS,
        "label": label,
        **simulated_marker(label),
        "engine": engine,
        **provenance,
        "dataset": dataset,
        "load": load,
        "client": client_info(),
        "sandbox": sandbox,
        "started_at": iso(started_at),
        "ended_at": iso(ended_at),
        "levels": levels,
        "notes": notes,
    }


# What the latency fields mean (docs/bench-schema.md): vLLM bench serve's definitions.
METRIC_DEFINITIONS = (
    "vllm bench serve (vLLM 0.31.0 benchmarks/serve.py, benchmarks/lib/endpoint_request_func.py)"
)


def check_document(doc: Any, where: str = "document") -> dict[str, Any]:
    """Cheap structural check (the full JSON Schema is for tests and external tools)."""
    if not isinstance(doc, dict) or doc.get("schema") not in READABLE:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise SpecError(
            f"{where}: not a peagle.bench/1, /2 or /3 results document (schema: {found!r})"
        )
    if doc.get("kind") == "bench":
        if not isinstance(doc.get("levels"), list) or "instance_type" not in doc:
            raise SpecError(f"{where}: a bench document needs 'instance_type' and 'levels'")
    elif doc.get("kind") == "sweep":
        if not isinstance(doc.get("runs"), list):
            raise SpecError(f"{where}: a sweep document needs 'runs'")
        for i, run in enumerate(doc["runs"]):
            check_document(run, f"{where} runs[{i}]")
    else:
        raise SpecError(f"{where}: unknown kind {doc.get('kind')!r}")
    return doc


def save_document(doc: dict[str, Any], path: Path) -> Path:
    """Atomic (files.write_atomic): an interrupted run never leaves half a file."""
    from .files import write_atomic

    return write_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def load_document(path: Path, *, field: str = "path") -> dict[str, Any]:
    """A results document read from `path` (`field`: the caller's parameter that named it)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SpecError(
            f"cannot read {path}: {e.strerror or e}", field=field, value=str(path)
        ) from None
    except ValueError as e:
        raise SpecError(f"{path}: not JSON ({e})", field=field, value=str(path)) from None
    return check_document(doc, str(path))
