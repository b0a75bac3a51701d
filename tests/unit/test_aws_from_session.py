"""`AwsContext.from_session`: the public way to run on a boto3 session another library
made (the sagemaker bridge's `from_sagemaker`), instead of assigning the context's
private `_session`."""

from __future__ import annotations

import boto3

from sm_peagle.aws import AwsContext

KEYS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"}


def test_a_session_in_the_same_region_is_used_as_it_is() -> None:
    session = boto3.session.Session(region_name="eu-west-1", **KEYS)
    aws = AwsContext.from_session(session)
    assert aws.session is session and aws.region == "eu-west-1"
    assert AwsContext.from_session(session, "eu-west-1").session is session


def test_a_session_of_another_region_is_rebound_with_the_same_identity() -> None:
    session = boto3.session.Session(region_name="us-east-1", **KEYS)
    aws = AwsContext.from_session(session, "eu-west-1")
    assert aws.region == "eu-west-1"
    # The same credentials, not the environment's credential chain.
    assert aws.session.get_credentials().access_key == "AKIDEXAMPLE"
    assert aws.client("sagemaker").meta.region_name == "eu-west-1"


def test_derived_contexts_keep_the_session() -> None:
    session = boto3.session.Session(region_name="eu-west-1", **KEYS)
    derived = AwsContext.from_session(session).derive(max_pool_connections=64)
    assert derived.session is session and derived.max_pool_connections == 64
    # A context without a given session still makes its own on first use.
    assert AwsContext("eu-west-1").derive().session is not session
