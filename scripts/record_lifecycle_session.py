"""Record a real terminal session of the lifecycle against a local moto server.

Runs the installed `peagle` CLI in subprocesses, pointed at a ThreadedMotoServer (with
peagle's SageMaker harness: modern GPU types, UpdateEndpoint, a 2 s Creating phase)
through the standard AWS_ENDPOINT_URL setting, and prints the transcript for the README.
This is moto, not AWS: no GPU runs, no tokens are generated.

    python scripts/record_lifecycle_session.py > /tmp/session.txt
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
import tempfile

import boto3
from moto.server import ThreadedMotoServer

from peagle_sandbox.synthetic_head import synthetic_head
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION=REGION,
        PEAGLE_POLL_SECONDS="0.5",
        PEAGLE_CACHE_DIR=tempfile.mkdtemp(prefix="peagle-cache-"),
        COLUMNS="110",
    )
    os.environ.update(
        {k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    )
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log in the transcript
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    env["AWS_ENDPOINT_URL"] = url
    harness = SageMakerHarness(creating_seconds=2.0, updating_seconds=2.0).install()
    try:
        iam = boto3.client("iam", endpoint_url=url)
        role = iam.create_role(
            RoleName="peagle-exec",
            AssumeRolePolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": "sts:AssumeRole",
                            "Principal": {"Service": "sagemaker.amazonaws.com"},
                        }
                    ],
                }
            ),
        )["Role"]["Arn"]
        s3 = boto3.client("s3", endpoint_url=url)
        bucket = "jumpstart-cache-prod-us-east-1"
        s3.create_bucket(Bucket=bucket)
        s3.put_object(
            Bucket=bucket,
            Key="openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/inference-prepack/"
            "v1.0.0/config.json",
            Body=b"{}",
        )
        for key, body in synthetic_head(target_hidden=2880, target_vocab=201088).items():
            s3.put_object(
                Bucket=bucket, Key=f"lmi-eagle-heads/models/gpt-oss-20b-p-eagle/{key}", Body=body
            )
        env["PEAGLE_ROLE_ARN"] = role
        name = "peagle-gpt-oss-20b-p-eagle"
        steps = [
            "peagle deploy gpt-oss-20b --yes",
            f"peagle status {name}",
            "peagle ls",
            f"peagle update {name} -k 5 --yes",
            f"peagle logs {name} --since 5m",
            f"peagle delete {name} --yes",
            f"peagle delete {name} --yes",
            "peagle ls",
        ]
        for cmd in steps:
            if cmd.startswith("peagle logs"):
                harness.seed_logs(
                    name,
                    [
                        "INFO vllm.entrypoints.openai.api_server: Starting vLLM API server on "
                        "http://0.0.0.0:8080",
                        "INFO SpecDecoding metrics: Mean acceptance length: 3.41, Accepted: 1204 "
                        "tokens, Drafted: 2495 tokens, Avg Draft acceptance rate: 48.2%",
                    ],
                )
            print(f"$ {cmd}")
            proc = subprocess.run(shlex.split(cmd), env=env, capture_output=True, text=True)
            sys.stdout.write(proc.stderr + proc.stdout)
            if proc.returncode:
                print(f"(exit {proc.returncode})")
            print()
    finally:
        harness.uninstall()
        server.stop()


if __name__ == "__main__":
    main()
