"""The results document, `"schema": "peagle.bench/4"` (see docs/bench-schema.md and the JSON
Schema docs/peagle.bench-4.schema.json that the tests validate every document against).
`peagle.bench/1`, `/2` and `/3` documents (docs/peagle.bench-1.schema.json, -2, -3) are
still read.

Two kinds share the schema:

- ``kind: "bench"``: one endpoint (one configuration), a list of levels;
- ``kind: "sweep"``: several bench documents (``runs``) plus the comparison table and the K
  recommendation.

`recommend --results-dir DIR` reads the top-level ``instance_type`` and
``levels[].output_tokens_per_s`` of bench documents; those names must never change within
any version. Every document says where its numbers came from (provenance) and carries one
label of what produced them: `AWS`, or the label of the plugin target that answered
(`contract.ResultLabel`, e.g. a local target's simulated engine). Dollar figures per token
are computed only for AWS runs; elsewhere the instance price is kept for planning and
labelled as the price of the instance one would rent, not of this run.

`"simulated": true` is carried by documents whose tokens were made up (no model ran: the
label is a simulated `ResultLabel`). A real engine's document (AWS, or a plugin target's
real engine) has no `simulated` key: its `label` and `engine` name the engine that
answered. Up to `peagle.bench/2` every document not from AWS said `simulated: true`, a
real engine's too; `is_simulated()` and `from_target()` read every version. Up to /3 the
target record was kept under another key (`LEGACY_TARGET_KEY`); /4 calls it `target`.
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
    "caveat_of",
    "client_info",
    "iso",
    "label_of",
    "is_aws_label",
    "is_simulated",
    "from_target",
    "simulated_caveat",
    "simulated_marker",
    "provenance",
    "load_document",
    "provenance_of",
    "save_document",
    "target_record",
]

SCHEMA = "peagle.bench/4"
# The versions whose `label` is the product's.
LABELLED = ("peagle.bench/2", "peagle.bench/3", SCHEMA)
READABLE = ("peagle.bench/1", *LABELLED)  # `report`, `recommend` and `tune-k` read them all
SIMULATED = "SIMULATED"
MEASURED = "MEASURED"
PRICE_NOTE = "price of the instance you would rent, not of this run"
# Said of made-up numbers when no installed plugin declares a simulated label (a document
# read where its plugin is not installed, or a simulated answer from an unknown server).
GENERIC_SIMULATED_CAVEAT = (
    "SIMULATED: no model ran; these tokens and timings were made up and say nothing about "
    "real GPU performance"
)

# -- reading older documents -------------------------------------------------------------
# peagle.bench/2 and /3 kept the target record (url, engine) under the name of the one
# local target that existed then; /4 calls it `target`. Only read, never written.
LEGACY_TARGET_KEY = "sandbox"
# peagle.bench/1 labelled every run not from AWS `SIMULATED` (its word for "not AWS
# hardware"); the labels /2 gave those runs, by engine, were these. Only read.
LEGACY_SIMULATED_LABEL = "SANDBOX (SIMULATED)"
LEGACY_REAL_ENGINE_LABEL = "SANDBOX (vllm {version}, CPU, tiny model)"
LEGACY_REAL_ENGINE_PROVENANCE = "SANDBOX, {engine}"


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def target_record() -> dict[str, Any] | None:
    """What a document keeps of the plugin target this process talks to (None on AWS):
    its name, label, engine and URL, and what else the target reports (`extra`)."""
    from .. import plugins

    state = plugins.current_target()
    if state is None:
        return None
    return {
        "name": state.name,
        "label": state.label,
        "engine": state.engine,
        "url": state.url,
        **dict(state.extra),
    }


def _simulated() -> Any:
    """The installed plugins' label of made-up numbers (a simulated `ResultLabel` naming
    no version), else None."""
    from .. import plugins

    return next(
        (
            lab
            for plugin in plugins.installed()
            for lab in plugin.labels()
            if lab.simulated and "*" not in lab.label
        ),
        None,
    )


def _simulated_label() -> str:
    """The label of made-up numbers: the installed plugins' simulated label, else
    `SIMULATED`."""
    declared = _simulated()
    return declared.label if declared is not None else SIMULATED


def label_of(simulated: bool, target: dict[str, Any] | None = None) -> str:
    """The label of what produced the numbers: the target's (`target_record()`), or AWS.
    A run that saw a simulated answer (the `x-peagle-simulated` header) but has no target
    record gets the simulated label: never AWS."""
    from .. import settings

    if target is not None and target.get("label"):
        return str(target["label"])
    return _simulated_label() if simulated else settings.AWS


def is_aws_label(label: Any) -> bool:
    from .. import settings

    return label == settings.AWS or label == MEASURED  # MEASURED: peagle.bench/1's word


def _is_simulated_label(label: str) -> bool:
    from .. import plugins

    declared = plugins.label(label)
    if declared is not None:
        return declared.simulated
    return label in (SIMULATED, LEGACY_SIMULATED_LABEL)


def simulated_marker(label: str) -> dict[str, bool]:
    """The `simulated` key a document (bench, sweep, race) with this label carries:
    `{"simulated": True}` for made-up numbers (a simulated `ResultLabel`), nothing for a
    real engine's (AWS, or a target's real engine), whose label and `engine` say which one
    answered."""
    return {"simulated": True} if _is_simulated_label(label) else {}


def is_simulated(doc: dict[str, Any]) -> bool:
    """Whether the numbers were made up, for every version: up to /2 a real engine not on
    AWS said `simulated: true` too, and named itself (`vllm ...`) in `engine`."""
    return bool(doc.get("simulated")) and not str(doc.get("engine") or "").startswith("vllm ")


def from_target(doc: dict[str, Any]) -> bool:
    """Whether the numbers came from a plugin target (any engine), not AWS, for every
    version: /3 and /4 by their label (a real engine carries no `simulated`), /2 and /1
    by their `simulated` flag too. The one rule `recommend` reads too (`measured_on_aws`:
    planning sits below this package)."""
    from ..planning.recommend import measured_on_aws

    return not measured_on_aws(doc)


def simulated_caveat() -> str:
    """What made-up numbers mean, in the words of the plugin whose simulated label they
    carry (its `ResultLabel.caveat`), else a generic sentence."""
    declared = _simulated()
    return declared.caveat if declared is not None else GENERIC_SIMULATED_CAVEAT


def caveat_of(doc: dict[str, Any]) -> str | None:
    """The sentence printed with a document's numbers when they are not AWS's: made-up
    numbers' caveat, or the caveat the plugin declares for the document's label; None for
    AWS's numbers and for a label no installed plugin declares."""
    from .. import plugins

    if is_simulated(doc):
        declared = plugins.label(str(doc.get("label") or ""))
        if declared is not None and declared.simulated:
            return declared.caveat
        return simulated_caveat()
    label = doc.get("label")
    if label is None or is_aws_label(label):
        return None
    declared = plugins.label(str(label))
    return declared.caveat if declared is not None else None


def legacy_label(engine: str) -> str:
    """The label peagle.bench/2 gave a peagle.bench/1 run not from AWS, by its engine."""
    if engine.startswith("vllm ") and "(" in engine:
        version = engine.removeprefix("vllm ").split(" ", 1)[0]
        return LEGACY_REAL_ENGINE_LABEL.format(version=version)
    return LEGACY_SIMULATED_LABEL


def provenance(doc: dict[str, Any]) -> str:
    """What a human header says produced a document: its label (peagle.bench/2 and
    later), or for a peagle.bench/1 document of a real engine not on AWS the words /2
    gave it, which that version's SIMULATED/MEASURED label alone cannot say."""
    engine = str(doc.get("engine") or "")
    label = str(doc.get("label"))
    if label in (SIMULATED, MEASURED) and doc.get("simulated") and engine.startswith("vllm "):
        return LEGACY_REAL_ENGINE_PROVENANCE.format(engine=engine)
    return label


def target_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A document's target record ({} on AWS), under its /4 key or the older one."""
    return doc.get("target") or doc.get(LEGACY_TARGET_KEY) or {}


def engine_of(simulated: bool, target: dict[str, Any] | None, version: str | None) -> str:
    """Which engine produced the numbers: the target's (`SIMULATED`, or its real engine,
    e.g. `vllm 0.31.0 (CPU, tiny model)`), else the endpoint's vLLM on SageMaker."""
    engine = str((target or {}).get("engine") or "")
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
    target: dict[str, Any] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """One endpoint's bench document.

    `simulated`: the numbers did not come from AWS (a plugin target answered, or a
    response said its tokens were made up); `target`: the target's record
    (`target_record()`), whose label the document carries. The document says `simulated`
    only of made-up numbers (simulated_marker), and its first note is the caveat the
    plugin declares for its label.
    """
    label = label_of(simulated, target)
    notes = list(notes or [])
    provenance = dict(provenance)
    if not is_aws_label(label):
        # Not an AWS run: no cost per token (CPU tok/s times a GPU price means nothing).
        for lv in levels:
            lv["usd_per_million_output_tokens"] = None
        provenance["usd_per_hour_note"] = PRICE_NOTE
    engine = engine_of(simulated, target, provenance.get("vllm_version"))
    if not is_aws_label(label):
        caveat = caveat_of({"label": label, "engine": engine, **simulated_marker(label)})
        notes.insert(0, caveat or f"{label}: not measured on AWS")
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
        "target": target,
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
            f"{where}: not a peagle.bench/1, /2, /3 or /4 results document (schema: {found!r})"
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
