"""Make a P-EAGLE endpoint "elsewhere": the three raw boto3 calls JumpStart's console and
the `sagemaker` SDK send for GPT-OSS-20B's `lmi-optimized` config (spec v3.38.0), K=3 in
SM_VLLM_SPECULATIVE_CONFIG. No peagle involved: `peagle adopt NAME` then takes it over.

    peagle sandbox start && eval "$(peagle sandbox env)"
    python examples/jumpstart_endpoint.py js-gpt-oss-20b          # on the local sandbox
    python examples/jumpstart_endpoint.py js-gpt-oss-20b --role ARN   # on AWS (us-east-1)

The requests are us-east-1's (the image registry and the JumpStart bucket are regional).
On AWS this starts a billed ml.g7e.2xlarge instance; `peagle delete NAME --yes` after
adopting it, or the console, removes it.
"""

from __future__ import annotations

import argparse
import json
import os

import boto3

REGION = "us-east-1"
BUCKET = f"jumpstart-cache-prod-{REGION}"
IMAGE = (
    f"763104351884.dkr.ecr.{REGION}.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
)
WEIGHTS = f"s3://{BUCKET}/openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/inference-prepack/v1.0.0/"
HEAD = f"s3://{BUCKET}/lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"
TAGS = [
    {"Key": "sagemaker-sdk:jumpstart-model-id", "Value": "openai-reasoning-gpt-oss-20b"},
    {"Key": "sagemaker-sdk:jumpstart-model-version", "Value": "3.38.0"},
    {"Key": "sagemaker-sdk:jumpstart-inference-config-name", "Value": "lmi-optimized"},
]


def speculative_config(k: int) -> str:
    # As JumpStart writes it (json.dumps with its default spacing).
    return json.dumps(
        {
            "model": "/opt/ml/additional-model-data-sources/eagle",
            "method": "eagle3",
            "num_speculative_tokens": k,
            "parallel_drafting": True,
        }
    )


def create(name: str, role: str, k: int = 3) -> None:
    """CreateModel, CreateEndpointConfig and CreateEndpoint, as JumpStart sends them."""
    sm = boto3.client("sagemaker", region_name=REGION)
    s3 = {"S3DataType": "S3Prefix", "CompressionType": "None"}
    sm.create_model(
        ModelName=f"{name}-mdl",
        ExecutionRoleArn=role,
        PrimaryContainer={
            "Image": IMAGE,
            "ModelDataSource": {"S3DataSource": {"S3Uri": WEIGHTS, **s3}},
            "AdditionalModelDataSources": [
                {"ChannelName": "eagle", "S3DataSource": {"S3Uri": HEAD, **s3}}
            ],
            "Environment": {
                "HF_MODEL_ID": "/opt/ml/model",
                "SAGEMAKER_MODEL_SERVER_TIMEOUT": "3600",
                "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
                "SAGEMAKER_PROGRAM": "inference.py",
                "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/model/code",
                "SM_VLLM_MAX_MODEL_LEN": "8192",
                "SM_VLLM_SPECULATIVE_CONFIG": speculative_config(k),
                "SM_VLLM_TENSOR_PARALLEL_SIZE": "1",
                "TIKTOKEN_ENCODINGS_BASE": "/opt/ml/model",
                "TENSOR_PARALLEL_DEGREE": "1",
            },
        },
        EnableNetworkIsolation=True,
        Tags=TAGS,
    )
    sm.create_endpoint_config(
        EndpointConfigName=f"{name}-cfg",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": f"{name}-mdl",
                "InstanceType": "ml.g7e.2xlarge",
                "InitialInstanceCount": 1,
                "ContainerStartupHealthCheckTimeoutInSeconds": 3600,
                "ModelDataDownloadTimeoutInSeconds": 3600,
            }
        ],
        Tags=TAGS,
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-cfg", Tags=TAGS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="endpoint name (the config and model get -cfg and -mdl)")
    ap.add_argument("--role", default=os.environ.get("PEAGLE_ROLE_ARN"),
                    help="SageMaker execution role ARN (default: $PEAGLE_ROLE_ARN)")  # fmt: skip
    ap.add_argument("-k", type=int, default=3, help="num_speculative_tokens (JumpStart: 3)")
    args = ap.parse_args()
    if not args.role:
        ap.error("pass --role ARN (or set PEAGLE_ROLE_ARN; `peagle sandbox env` sets it)")
    create(args.name, args.role, args.k)
    sm = boto3.client("sagemaker", region_name=REGION)
    waiter = sm.get_waiter("endpoint_in_service")
    waiter.wait(EndpointName=args.name, WaiterConfig={"Delay": 5, "MaxAttempts": 360})
    print(f"{args.name} is InService (made without peagle; `peagle adopt {args.name}` next)")


if __name__ == "__main__":
    main()
