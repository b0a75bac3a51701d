"""Where an operation talks to, said in one line before the first request ("talking to:
AWS, region …", "talking to: LOCAL (SIMULATED) at …"), so nobody mistakes a plugin's local
target for AWS.

The SDK's operations pass this line to their `progress` callback; the CLI prints it on
stderr (`sm_peagle.cli.context.hello` is the `on_connect` that prints it).
"""

from __future__ import annotations

from typing import Any

from .. import settings

__all__ = ["talking_to", "talking_to_client", "talking_to_context"]


def talking_to(
    region: str | None, service: str = "SAGEMAKER", *, endpoint_url: str | None = None
) -> str:
    """The "talking to: …" line for `service` (as in AWS_ENDPOINT_URL_<SERVICE>);
    `endpoint_url`: the URL a client was given (`Client(endpoint_url=…)`, a plugin
    target's client), which wins over the environment's."""
    from .. import plugins

    state = plugins.current_target()
    local = state.url if state is not None else ""
    if endpoint_url and endpoint_url.rstrip("/") != local.rstrip("/"):
        return f"talking to: custom AWS endpoint {endpoint_url} (region {region})"
    if state is not None:
        # The target's label first (what produces results there): the same words the
        # logs, --json documents and bench results carry.
        return f"talking to: {state.label} at {state.url} (peagle's local {state.name}; not AWS)"
    endpoint = settings.aws_endpoint_url(service)
    if endpoint:
        return f"talking to: custom AWS endpoint {endpoint} (region {region})"
    return f"talking to: AWS, region {region}"


def talking_to_client(client: Any, endpoint_url: str | None = None) -> str:
    """The same line for a boto3 client already made (S3: its own endpoint setting);
    `endpoint_url` as `talking_to` takes it."""
    service = client.meta.service_model.service_id.hyphenize().upper().replace("-", "_")
    return talking_to(client.meta.region_name, service, endpoint_url=endpoint_url)


def talking_to_context(aws: Any) -> str:
    """The line for an AWS context (`AwsContext`): its region and, if it has one, the
    endpoint URL it was given."""
    return talking_to(aws.region, endpoint_url=getattr(aws, "endpoint_url", None))
