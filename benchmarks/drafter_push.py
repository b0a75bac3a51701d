"""Benchmark `peagle drafter push` against a plain sequential `upload_file` loop.

Both upload the same synthetic sharded head (N safetensors shards of zeros + index +
config.json, written to a temp dir one 8 MiB chunk at a time) to a local moto S3 server
running in its own process, into different prefixes. peagle's time includes its sha256
pass over every file (it is part of a real push: it makes re-runs resumable).

A local moto server is not S3: no network latency or bandwidth limit, and the server is
Python on the same host (competing for the same cores). The numbers measure client-side
overhead and how well each approach keeps the server busy, not S3 throughput.

    python benchmarks/drafter_push.py [--size-mb 1024] [--repeat 1] [--write-readme README.md]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from readme_block import markers, replace_block

from sm_peagle.lifecycle.drafter_upload import make_push_client, push_drafter

MIB = 1024 * 1024
BUCKET = "peagle-bench"
INDEX = "model.safetensors.index.json"
START, END = markers("drafter-push")


def write_head(root: Path, size_mb: int, shards: int) -> int:
    """Write a sharded head of about size_mb MiB to root; returns its total bytes."""
    per_shard = size_mb * MIB // shards
    chunk = bytes(8 * MIB)  # zeros: moto stores bytes as given (no compression anywhere)
    weight_map: dict[str, str] = {}
    total = 0
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        tensor = f"model.layers.{i}.weight"
        header = json.dumps(
            {tensor: {"dtype": "U8", "shape": [per_shard], "data_offsets": [0, per_shard]}}
        ).encode()
        with (root / name).open("wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
            left = per_shard
            while left:
                n = min(left, len(chunk))
                f.write(chunk[:n])
                left -= n
        weight_map[tensor] = name
        total += (root / name).stat().st_size
    index = {"metadata": {"total_size": shards * per_shard}, "weight_map": weight_map}
    (root / INDEX).write_text(json.dumps(index))
    config = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2880}
    (root / "config.json").write_text(json.dumps(config))
    return total + sum((root / n).stat().st_size for n in ("config.json", INDEX))


def _serve(conn: Any, stop: Any) -> None:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    conn.send(server.get_host_and_port()[1])
    stop.wait()
    server.stop()


def start_server() -> tuple[str, Callable[[], None]]:
    """moto in a child process, so its request handling does not share our GIL."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    stop = ctx.Event()
    proc = ctx.Process(target=_serve, args=(child, stop), daemon=True)
    proc.start()
    port = parent.recv()

    def shutdown() -> None:
        stop.set()
        proc.join(10)
        if proc.is_alive():
            proc.terminate()

    return f"http://127.0.0.1:{port}", shutdown


def plain_upload(client: Any, root: Path, prefix: str) -> None:
    """What a user writes by hand: one upload_file per file, default TransferConfig."""
    for p in sorted(root.iterdir()):
        client.upload_file(str(p), BUCKET, prefix + p.name)


def peagle_upload(client: Any, root: Path, prefix: str) -> None:
    push_drafter(root, f"s3://{BUCKET}/{prefix}", s3_client=client)


def empty_bucket(client: Any) -> None:
    # Keeps the server's spooled temp files from piling up across repeats.
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=BUCKET, Delete={"Objects": keys})


def run(size_mb: int, repeat: int, shards: int) -> dict[str, Any]:
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    url, shutdown = start_server()
    os.environ["AWS_ENDPOINT_URL"] = url  # AwsContext (make_push_client) honours it
    import boto3

    plain_client = boto3.client("s3", region_name="us-east-1", endpoint_url=url)
    peagle_client = make_push_client("us-east-1")
    plain_client.create_bucket(Bucket=BUCKET)
    for c in (plain_client, peagle_client):  # warm-up: imports, connections, credentials
        c.put_object(Bucket=BUCKET, Key="warmup", Body=b"x")
    times: dict[str, list[float]] = {"peagle push_drafter": [], "sequential upload_file": []}
    try:
        with tempfile.TemporaryDirectory(prefix="peagle-bench-") as tmp:
            root = Path(tmp)
            total = write_head(root, size_mb, shards)
            os.sync()  # flush the written GB now, not during the first timed run
            hash_s = time_hashing(root)
            for i in range(repeat):
                jobs = [
                    ("peagle push_drafter", lambda p: peagle_upload(peagle_client, root, p)),
                    ("sequential upload_file", lambda p: plain_upload(plain_client, root, p)),
                ]
                if i % 2:  # alternate which goes first (page cache, server warm-up)
                    jobs.reverse()
                for label, job in jobs:
                    t0 = time.perf_counter()
                    job(f"run{i}/{label.split()[0]}/")
                    times[label].append(time.perf_counter() - t0)
                    print(f"  run {i + 1}: {label}: {times[label][-1]:.2f} s", file=sys.stderr)
                empty_bucket(plain_client)
    finally:
        shutdown()
    return {"bytes": total, "shards": shards, "repeat": repeat, "times": times, "hash_s": hash_s}


def time_hashing(root: Path) -> float:
    """The sha256 pass push_drafter makes before uploading (what makes re-runs resumable)."""
    from sm_peagle.lifecycle.drafter_upload import _hash_all, _LocalFile

    files = [_LocalFile(p.name, p, p.stat().st_size) for p in sorted(root.iterdir())]
    t0 = time.perf_counter()
    _hash_all(files)
    return time.perf_counter() - t0


def table(res: dict[str, Any]) -> str:
    mb = res["bytes"] / MIB
    best = {label: min(ts) for label, ts in res["times"].items()}
    base = best["sequential upload_file"]
    lines = [
        f"Head: {res['shards']} safetensors shards of zeros + index + config.json, "
        f"{mb:,.0f} MiB; local moto server (separate process), "
        f"{os.cpu_count()} CPU cores; best of {res['repeat']}.",
        "",
        "| method | best time (s) | MiB/s | vs sequential | all runs (s) |",
        "|---|---:|---:|---:|---|",
    ]
    for label, t in best.items():
        runs = ", ".join(f"{x:.2f}" for x in res["times"][label])
        lines.append(f"| {label} | {t:.2f} | {mb / t:,.0f} | {base / t:.2f}x | {runs} |")
    lines += [
        "",
        f"peagle's time includes {res['hash_s']:.2f} s of sha256 over every file (measured "
        "separately; it makes re-runs skip what is uploaded). The server runs on the same "
        "cores as the client, so this compares client overhead against one local Python "
        "server, not network throughput: more parallel streams cannot help when the server "
        "is the bottleneck.",
    ]
    return "\n".join(lines)


def write_readme(path: Path, text: str) -> bool:
    return replace_block(path, "drafter-push", text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="head size in MiB (default 1024)")
    ap.add_argument("--shards", type=int, default=4, help="number of shards (default 4)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per method (default 1)")
    ap.add_argument("--write-readme", type=Path, help="replace the bench block in this file")
    args = ap.parse_args(argv)
    res = run(args.size_mb, args.repeat, args.shards)
    text = table(res)
    print(text)
    if args.write_readme:
        if write_readme(args.write_readme, text):
            print(f"updated {args.write_readme}", file=sys.stderr)
        else:
            print(f"{args.write_readme}: no {START} ... {END} block; unchanged", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
