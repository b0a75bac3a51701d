"""`peagle drafter inspect|check|push` and `peagle plan --drafter DIR`, through the real CLI.

Heads checked against the catalog's gpt-oss-20b are shaped for its target (hidden 2880,
vocab 201088) with a tiny drafter hidden size, so each is well under 1 MB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from safetensors.numpy import save_file

from sm_peagle.cli import output
from sm_peagle.cli.app import main
from sm_peagle.lifecycle.drafter_upload import manifest_key
from tests.drafter_fixtures import TARGET_HIDDEN, TARGET_VOCAB, make_head

GPT_OSS_HIDDEN, GPT_OSS_VOCAB = 2880, 201088
BUCKET = "peagle-heads"
DEST = f"s3://{BUCKET}/heads/gpt-oss-20b/"


def make_target_head(
    d: Path,
    *,
    mask_key: str = "ptd_token_id",
    mask_hidden: bool = True,
    hidden: int = 32,
    for_022: bool = False,
) -> Path:
    """A P-EAGLE head for gpt-oss-20b: fc (hidden, 3 x 2880). mask_hidden follows vLLM's
    sizing (llama_eagle3.py): 3 x the head's hidden (1, 1, 96) up to 0.21.x, the default
    0.18.0; target_hidden_size x 3 (1, 1, 8640) from 0.22.0 (`for_022`)."""
    d.mkdir(parents=True, exist_ok=True)
    draft_vocab = 64
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_attention_heads": 4,
        "num_hidden_layers": 1,
        "vocab_size": GPT_OSS_VOCAB,
        "draft_vocab_size": draft_vocab,
        "target_hidden_size": GPT_OSS_HIDDEN,
        mask_key: 201020,
    }
    (d / "config.json").write_text(json.dumps(cfg))
    # Names as vLLM's EAGLE-3 loader maps them: unprefixed (it prepends 'model.' itself).
    tensors = {
        "fc.weight": np.zeros((hidden, 3 * GPT_OSS_HIDDEN), np.float16),
        "d2t": np.arange(draft_vocab, dtype=np.int64),
        "lm_head.weight": np.zeros((draft_vocab, hidden), np.float16),
        "norm.weight": np.ones(hidden, np.float32),
    }
    if mask_hidden:
        size = 3 * (GPT_OSS_HIDDEN if for_022 else hidden)
        tensors["mask_hidden"] = np.zeros((1, 1, size), np.float16)
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    return d


# What a head without its layer and embedding tensors draws: warnings, not failures.
HEADER_ONLY_WARNINGS = {"drafter.unloaded", "drafter.borrowed"}


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh, wide rich console per test: table cells stay on one line for the asserts.
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setattr(output, "_console", None)
    monkeypatch.setattr(output, "_err_console", None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code, out, err = run(capsys, *argv, "--json")
    return code, json.loads(out), err


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["status"] for c in doc["checks"]}


# --- inspect ---------------------------------------------------------------------------


def test_inspect_human_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = make_target_head(tmp_path / "head")
    code, out, err = run(capsys, "drafter", "inspect", head)
    assert code == 0, err
    for text in (
        "LlamaForCausalLMEagle3",
        "201,088 / 64",
        "ptd_token_id = 201020",
        "1x1x96",
        "fc.weight 32x8640",
        "F16, F32, I64",
        "safetensors headers only",
    ):
        assert text in out


def test_inspect_json_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = make_head(tmp_path / "head", "peagle-sharded")
    code, doc, _ = run_json(capsys, "drafter", "inspect", head)
    assert code == 0
    assert doc["architecture"] == "LlamaForCausalLMEagle3"
    assert doc["hidden_size"] == TARGET_HIDDEN
    assert doc["mask_token"] == {"key": "ptd_token_id", "value": TARGET_VOCAB - 1}
    assert doc["mask_hidden"] is True and doc["mask_hidden_shape"] == [1, 1, 3 * TARGET_HIDDEN]
    assert doc["fc_shape"] == [TARGET_HIDDEN, 3 * TARGET_HIDDEN]
    assert doc["d2t"] is True and doc["draft_vocab_size"] == 128
    assert len(doc["weight_files"]) == 2 and doc["problems"] == []
    assert doc["tensor_count"] > 10 and doc["parameter_count"] > 0


def test_inspect_missing_dir_is_one_line(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "drafter", "inspect", tmp_path / "nope")
    assert code == 2 and out == ""
    assert err.startswith("error: drafter directory") and err.count("\n") == 1


# --- check -----------------------------------------------------------------------------


def test_check_passes_against_catalog_model(tmp_path: Path, capsys) -> None:
    head = make_target_head(tmp_path / "head")
    code, out, err = run(capsys, "drafter", "check", head, "--model", "gpt-oss-20b")
    assert code == 0, err
    assert "mask_hidden [1, 1, 96] = 3 x config.json hidden_size 32" in out  # brackets kept
    assert "K=3 <= trained K=10" in out  # catalog default K vs the head's trained K
    code, doc, _ = run_json(capsys, "drafter", "check", head, "-m", "gpt-oss-20b", "-k", "7")
    assert code == 0 and doc["ok"] is True
    # This head holds only fc, d2t, lm_head, norm and mask_hidden: vLLM loads it with its
    # layer and embeddings missing (silently wrong), which the second pass warns of.
    assert {k for k, v in statuses(doc).items() if v != "pass"} == HEADER_ONLY_WARNINGS
    assert doc["target"] == {
        "model": "gpt-oss-20b",
        "hidden_size": 2880,
        "vocab_size": 201088,
        "vllm_version": "0.18.0",
        "mode": "p-eagle",
        "k": 7,
        "trained_k": 10,
    }


def test_check_no_mask_hidden_fails_exit_2(tmp_path: Path, capsys) -> None:
    head = make_target_head(tmp_path / "head", mask_hidden=False)
    code, out, err = run(capsys, "drafter", "check", head, "--model", "gpt-oss-20b")
    assert code == 2
    assert "FAIL" in out
    assert err.count("\n") == 1
    assert err.startswith("error: drafter.mask_hidden: mask_hidden not found in weights")
    assert "(fix: use a head trained for parallel drafting" in err
    # The same head is fine for plain EAGLE-3.
    code, doc, _ = run_json(
        capsys, "drafter", "check", head, "-m", "gpt-oss-20b", "--mode", "eagle3"
    )
    assert code == 0 and doc["ok"] is True


def test_check_json_failure_still_prints_document(tmp_path: Path, capsys) -> None:
    head = make_target_head(tmp_path / "head")
    code, doc, err = run_json(capsys, "drafter", "check", head, "-m", "gpt-oss-20b", "-k", "12")
    assert code == 2 and doc["ok"] is False
    assert statuses(doc)["drafter.k"] == "fail"
    assert (
        err == "error: drafter.k: K=12 is above the head's trained K=10 "
        "(fix: set num_speculative_tokens <= 10)\n"
    )


def test_check_mask_token_id_needs_vllm_028(tmp_path: Path, capsys) -> None:
    head = make_target_head(tmp_path / "head", mask_key="mask_token_id", for_022=True)
    code, out, err = run(capsys, "drafter", "check", head, "--model", "gpt-oss-20b")
    assert code == 2
    assert err.startswith("error: drafter.mask_token: config.json has only mask_token_id")
    assert "needs vLLM >= 0.28.0" in err and 'add "ptd_token_id": 201020' in err
    code, doc, err = run_json(
        capsys, "drafter", "check", head, "-m", "gpt-oss-20b", "--vllm-version", "0.28.0"
    )
    assert code == 0, err
    assert statuses(doc)["drafter.mask_token"] == "pass"


def test_check_scaled_head_with_target_overrides(tmp_path: Path, capsys) -> None:
    head = make_head(tmp_path / "head")  # target hidden 64: not gpt-oss-20b's 2880
    code, doc, _ = run_json(
        capsys,
        "drafter",
        "check",
        head,
        "--target-hidden-size",
        "64",
        "--target-vocab-size",
        "512",
        "--trained-k",
        "5",
        "-k",
        "4",
    )
    assert code == 0
    # Warnings only: no target depth to judge the aux layers by (no --target-layers), and
    # no embed_tokens.weight, so vLLM embeds the draft tokens with the target's.
    assert {k for k, v in statuses(doc).items() if v != "pass"} == {
        "drafter.aux_layers",
        "drafter.borrowed",
    }
    # Without --model there is no default K: the K rule says it did not check.
    code, doc, _ = run_json(capsys, "drafter", "check", head, "--target-hidden-size", "64")
    assert code == 0 and statuses(doc)["drafter.k"] == "warn"
    code, _, err = run(capsys, "drafter", "check", head, "--model", "gpt-oss-20b")
    # mask_hidden [1, 1, 192] = 3 x the head's own 64 is what vLLM builds; fc is what cannot
    # take 3 hidden states of a 2880 target.
    assert code == 2 and err.startswith("error: drafter.fc_shape: fc.weight is [64, 192]")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "no-such-model"], "error: model: unknown model 'no-such-model'"),
        (["--vllm-version", "latest"], "error: --vllm-version: not a vLLM version"),
        (["--mode", "medusa"], "error: unknown drafter mode 'medusa'"),
    ],
)
def test_check_bad_input_is_one_line(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    head = make_head(tmp_path / "head")
    code, out, err = run(capsys, "drafter", "check", head, *args)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


# --- push ------------------------------------------------------------------------------


@pytest.fixture
def bucket(aws: None) -> Any:
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def test_push_exact_keys_then_resume(tmp_path: Path, capsys, bucket: Any) -> None:
    head = make_head(tmp_path / "head", "peagle-sharded")
    code, doc, err = run_json(capsys, "drafter", "push", head, DEST, "--channel", "draft")
    assert code == 0, err
    names = sorted(p.name for p in head.iterdir())
    assert doc["uploaded"] == names and doc["skipped"] == []
    assert doc["bytes_uploaded"] == sum(p.stat().st_size for p in head.iterdir())
    assert doc["additional_model_data_source"] == {
        "ChannelName": "draft",
        "S3DataSource": {"S3Uri": DEST, "S3DataType": "S3Prefix", "CompressionType": "None"},
    }
    listed = bucket.list_objects_v2(Bucket=BUCKET)["Contents"]
    prefix = "heads/gpt-oss-20b/"
    assert sorted(o["Key"] for o in listed) == sorted(
        [prefix + n for n in names]
        + [manifest_key(prefix)]  # next to the mounted prefix, not in it
    )
    assert "pushing" in err  # plain progress on a non-TTY stderr

    code, doc, _ = run_json(capsys, "drafter", "push", head, DEST)
    assert code == 0
    assert doc["bytes_uploaded"] == 0 and doc["uploaded"] == [] and doc["skipped"] == names

    # The pushed prefix inspects from S3 by headers only.
    code, ins, _ = run_json(capsys, "drafter", "inspect", DEST)
    assert code == 0 and ins["mask_hidden"] is True
    assert 0 < ins["bytes_read"] < 10_000


def test_push_human_output_shows_entry(tmp_path: Path, capsys, bucket: Any) -> None:
    head = make_head(tmp_path / "head")
    code, out, err = run(capsys, "drafter", "push", head, DEST)
    assert code == 0, err
    assert "uploaded  2 file(s)" in out and "skipped   0 file(s)" in out
    entry = json.loads(out[out.index("[") :])
    assert entry[0]["ChannelName"] == "eagle" and entry[0]["S3DataSource"]["S3Uri"] == DEST


def test_push_bad_destination(tmp_path: Path, capsys) -> None:
    head = make_head(tmp_path / "head")
    code, _, err = run(capsys, "drafter", "push", head, "s3://bucket")
    assert code == 2 and "bucket root" in err
    code, _, err = run(capsys, "drafter", "push", head)
    assert code == 2 and err.startswith("error: push needs SRC and an s3://")
    code, _, err = run(capsys, "drafter", "push", tmp_path / "nope", DEST)
    assert code == 2
    assert err == (
        f"error: drafter directory {tmp_path / 'nope'} does not exist or is not a directory "
        "(fix: give the directory that holds config.json and the safetensors files)\n"
    )


def test_from_hf_without_huggingface_hub(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import now raises ImportError
    code, out, err = run(capsys, "drafter", "push", "--from-hf", "amazon/GPT-OSS-20B-P-EAGLE", DEST)
    assert code == 2 and out == ""
    assert "pip install huggingface_hub" in err and err.count("\n") == 1


def test_from_hf_offline_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def snapshot_download(**_: Any) -> str:
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    fake = types.ModuleType("huggingface_hub")
    fake.snapshot_download = snapshot_download  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    code, _, err = run(capsys, "drafter", "push", "--from-hf", "amazon/GPT-OSS-20B-P-EAGLE", DEST)
    assert code == 1
    assert err.splitlines()[-1].startswith(
        "error: could not download amazon/GPT-OSS-20B-P-EAGLE from the Hugging Face Hub"
    )


# --- plan --drafter DIR ----------------------------------------------------------------


def test_plan_runs_drafter_check(tmp_path: Path, capsys) -> None:
    good = make_target_head(tmp_path / "good")
    code, doc, err = run_json(capsys, "plan", "gpt-oss-20b", "--drafter", good)
    assert code == 0, err
    st = statuses(doc)
    assert st["drafter.mask_hidden"] == "pass" and st["drafter.fc_shape"] == "pass"

    bad = make_target_head(tmp_path / "bad", mask_hidden=False)
    code, out, err = run(capsys, "plan", "gpt-oss-20b", "--drafter", bad)
    assert code == 2
    assert err.startswith("error: drafter.mask_hidden: mask_hidden not found")
    # Baseline deploys no head, so the head is not judged.
    code, doc, _ = run_json(capsys, "plan", "gpt-oss-20b", "--drafter", bad, "--mode", "baseline")
    assert code == 0 and "drafter.mask_hidden" not in statuses(doc)


def test_help_imports_no_boto3_or_rich() -> None:
    code = (
        "import sys\nfrom sm_peagle.cli.app import main\n"
        "main(['drafter', '--help'])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore', 'rich')]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "inspect" in proc.stdout and "push" in proc.stdout
