"""`peagle recommend`: ranks only types that fit, by price, and says what is estimated."""

from __future__ import annotations

import json

from sm_peagle.cli.app import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_ranks_fitting_types_by_price_and_excludes_non_fitting(capsys):
    code, out, _ = run(capsys, "recommend", "gpt-oss-120b", "--json")
    doc = json.loads(out)
    types = [c["instance_type"] for c in doc["candidates"]]
    assert code == 0
    assert "ml.g6e.xlarge" not in types  # 65 GB of weights on one 48 GB GPU
    assert "ml.p6e-gb200.36xlarge" not in types  # Arm host
    assert types[0] == "ml.g7e.2xlarge"  # the cheapest known price that fits
    priced = [c["usd_per_hour"] for c in doc["candidates"] if c["usd_per_hour"] is not None]
    assert priced == sorted(priced)
    assert "estimate" in doc["basis"] and all(c["basis"] == "estimate" for c in doc["candidates"])


def test_budget_and_sequences_filter(capsys):
    _, out, _ = run(capsys, "recommend", "gpt-oss-20b", "--budget", "5", "--json")
    assert [c["instance_type"] for c in json.loads(out)["candidates"]] == ["ml.g7e.2xlarge"]
    _, out, _ = run(capsys, "recommend", "gpt-oss-120b", "--sequences", "200", "--json")
    cands = {c["instance_type"]: c for c in json.loads(out)["candidates"]}
    # By hand: fixed = 65.3 GB weights + 3.6 GB head + 2 GB per GPU; one 8192-token sequence
    # = 36 layers x 8 KV heads x 64 x 4 bytes x 8192 = 0.604 GB; usable = GPUs x GB x 0.9.
    # g7e.12xlarge: 172.8 - 72.9 = 99.9 GB -> 165 sequences < 200: out. g7e.24xlarge:
    # 345.6 - 76.9 = 268.7 GB -> 444. g6e.48xlarge: 8 x 48 x 0.9 - 84.9 = 260.7 GB -> 431.
    # No price is known for any of them: the most KV headroom comes first.
    assert list(cands) == [
        "ml.p6-b300.48xlarge",  # 1929.6 - 84.9 = 1844.7 GB
        "ml.p6-b200.48xlarge",  # 1288.8 - 84.9 = 1203.9 GB
        "ml.p5e.48xlarge",  # 1015.2 - 84.9 = 930.3 GB
        "ml.p5en.48xlarge",
        "ml.g7e.48xlarge",  # 691.2 - 84.9 = 606.3 GB
        "ml.p5.48xlarge",  # 576 - 84.9 = 491.1 GB
        "ml.g7e.24xlarge",
        "ml.g6e.48xlarge",
    ]
    assert (
        cands["ml.g7e.24xlarge"]["kv_headroom_gb"],
        cands["ml.g7e.24xlarge"]["max_length_sequences"],
    ) == (268.7, 444)
    assert cands["ml.g6e.48xlarge"]["max_length_sequences"] == 431


def test_measured_results_rank_by_cost_per_million_tokens(capsys, tmp_path):
    (tmp_path / "a.json").write_text(
        json.dumps(
            {
                "model": "gpt-oss-20b",
                "simulated": False,
                "instance_type": "ml.g6e.12xlarge",
                "levels": [{"output_tokens_per_s": 5000.0}],
            }
        )
    )
    (tmp_path / "b.json").write_text(
        json.dumps(
            {
                "model": "gpt-oss-20b",
                "simulated": False,
                "instance_type": "ml.g7e.2xlarge",
                "levels": [{"output_tokens_per_s": 1000.0}, {"output_tokens_per_s": 1400.0}],
            }
        )
    )
    _, out, _ = run(capsys, "recommend", "gpt-oss-20b", "--results-dir", tmp_path, "--json")
    doc = json.loads(out)
    first, second = doc["candidates"][:2]
    # g6e.12xlarge: 13.12 $/h / (5000 tok/s * 3600) * 1e6 = 0.7289; g7e.2xlarge: 0.8333.
    assert (first["instance_type"], first["usd_per_million_output_tokens"]) == (
        "ml.g6e.12xlarge",
        0.7289,
    )
    assert (second["instance_type"], second["usd_per_million_output_tokens"]) == (
        "ml.g7e.2xlarge",
        0.8333,
    )
    assert first["basis"] == "measured throughput" and "measured" in doc["basis"]


def test_unknown_model_is_one_line(capsys):
    code, _, err = run(capsys, "recommend", "nope")
    assert code == 2 and err.strip() == (
        "error: model: unknown model 'nope' (fix: see `peagle models`; "
        "JumpStart ids resolve live with AWS credentials)"
    )
