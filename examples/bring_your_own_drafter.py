"""Bring your own drafter head: inspect it, check it against the target, deploy with it,
stream a completion, and clean up.

    python examples/bring_your_own_drafter.py                 # on the local sandbox
    python examples/bring_your_own_drafter.py --head ./my-head --aws --role ARN

Without --head it writes a small synthetic head shaped for GPT-OSS-20B (zeros: it passes
vLLM's structural checks but cannot draft anything useful), which is enough to see every
step. On the sandbox all generated text is SIMULATED.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import sm_peagle
from peagle_sandbox.synthetic_head import synthetic_head
from sm_peagle.drafter import check_drafter, inspect_drafter
from sm_peagle.vllm.versions import DEFAULT_VLLM, VllmVersion


def write_synthetic_head(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, body in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (directory / name).write_bytes(body)
    return directory


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head", type=Path, help="Local drafter directory (default: synthetic).")
    ap.add_argument("--aws", action="store_true", help="Use AWS instead of the sandbox.")
    ap.add_argument("--role", help="Execution role ARN (AWS only).")
    ap.add_argument("-k", type=int, default=3)
    args = ap.parse_args(argv)
    if args.aws:
        return run(args)
    import peagle_sandbox

    with peagle_sandbox.use_sandbox():  # stops the sandbox it started when the run ends
        return run(args)


def run(args: argparse.Namespace) -> int:
    head = args.head or write_synthetic_head(Path(tempfile.mkdtemp()) / "head")

    # 1. Inspect: config.json and safetensors headers only, never the weights.
    info = inspect_drafter(str(head))
    print(f"head: {info.architecture}, mask_hidden {info.mask_hidden_shape}, fc {info.fc_shape}")

    # 2. Check against the target model and the vLLM version the image runs.
    target = sm_peagle.plan("gpt-oss-20b").model
    checks = check_drafter(
        info,
        target_hidden_size=target.hidden_size,
        target_vocab_size=target.vocab_size,
        vllm_version=VllmVersion(DEFAULT_VLLM),
        mode="p-eagle",
        k=args.k,
        trained_k=None,
    )
    for c in checks:
        print(f"  {c.status:4} {c.name}: {c.message}")
    if any(c.status == "fail" for c in checks):
        print("the head would fail at vLLM start-up; not deploying", file=sys.stderr)
        return 2

    # 3. Deploy with it: peagle pushes the directory to a private, content-addressed S3
    #    prefix and attaches it as the `eagle` channel. Deleted when the block ends.
    with sm_peagle.deploy(
        "gpt-oss-20b", drafter=str(head), k=args.k, role=args.role, name="byo-drafter-demo"
    ) as ep:
        source = ep.plan.create_model["PrimaryContainer"]["AdditionalModelDataSources"][0]
        print(f"drafter channel {source['ChannelName']} <- {source['S3DataSource']['S3Uri']}")
        result = ep.stream(messages=[{"role": "user", "content": "Say hello."}], max_tokens=48)
        for chunk in result:
            print(chunk.text, end="", flush=True)
        done = result.completion()
        print(f"\n{done.output_tokens} tokens, {done.mean_tokens_per_chunk:.2f} tokens/chunk")
    print("deleted byo-drafter-demo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
