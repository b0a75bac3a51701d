"""The harness's record of every AWS request it receives (peagle_sandbox.testing.request_log):
what later tests assert against, so it must hold exactly what the client sent, in order."""

from __future__ import annotations

import contextlib
import json

import boto3

from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

ROLE = "arn:aws:iam::123456789012:role/r"


def _create_model(client, name: str) -> None:
    client.create_model(
        ModelName=name,
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/x:1", "Environment": {}},
    )


def test_in_process_record_holds_each_request_in_order(sagemaker_harness: SageMakerHarness):
    sm = boto3.client("sagemaker", region_name="us-east-1")
    _create_model(sm, "m1")
    sm.describe_model(ModelName="m1")
    sm.delete_model(ModelName="m1")
    boto3.client("sts", region_name="us-east-1").get_caller_identity()

    log = sagemaker_harness.requests
    assert log.operations("sagemaker") == ["CreateModel", "DescribeModel", "DeleteModel"]
    assert log.operations("sts") == ["GetCallerIdentity"]
    (create,) = log.params("CreateModel")
    assert create["ModelName"] == "m1" and create["ExecutionRoleArn"] == ROLE
    assert create["PrimaryContainer"]["Image"].endswith("/x:1")
    times = [r.time for r in log.all()]
    assert times == sorted(times)


def test_the_record_is_empty_before_any_request_and_after_clear(
    sagemaker_harness: SageMakerHarness,
):
    assert sagemaker_harness.requests.all() == []
    boto3.client("sagemaker", region_name="us-east-1").list_endpoints()
    assert sagemaker_harness.requests.operations() == ["ListEndpoints"]
    sagemaker_harness.requests.clear()
    assert sagemaker_harness.requests.all() == []


def test_a_refused_request_is_recorded_too(sagemaker_harness: SageMakerHarness):
    # What was sent matters even when AWS says no: a test of "nothing sent" must see it.
    sm = boto3.client("sagemaker", region_name="us-east-1")
    with contextlib.suppress(sm.exceptions.ClientError):
        sm.describe_endpoint(EndpointName="nope")
    assert sagemaker_harness.requests.params("DescribeEndpoint") == [{"EndpointName": "nope"}]


def test_uninstall_stops_recording(aws):
    harness = SageMakerHarness(region="us-east-1").install()
    harness.uninstall()
    boto3.client("sagemaker", region_name="us-east-1").list_models()
    assert harness.requests.all() == []


def test_the_threaded_server_records_what_a_subprocess_client_would_send(
    moto_server: str, moto_server_harness: SageMakerHarness
):
    sm = boto3.client(
        "sagemaker",
        region_name="us-east-1",
        endpoint_url=moto_server,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    _create_model(sm, "served")
    assert moto_server_harness.requests.operations("sagemaker") == ["CreateModel"]
    assert moto_server_harness.requests.params("CreateModel")[0]["ModelName"] == "served"


def test_records_are_json_documents(sagemaker_harness: SageMakerHarness):
    boto3.client("sagemaker", region_name="us-east-1").list_models(MaxResults=5)
    (doc,) = sagemaker_harness.requests.to_list()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["service"] == "sagemaker" and doc["operation"] == "ListModels"
    assert doc["params"] == {"MaxResults": 5}


def test_s3_requests_are_recorded_with_their_api_names(sagemaker_harness: SageMakerHarness):
    """S3 has its own dispatch in moto; its calls are in the record all the same."""
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="bkt")
    s3.put_object(Bucket="bkt", Key="heads/x/config.json", Body=b"{}")
    s3.head_object(Bucket="bkt", Key="heads/x/config.json")
    s3.get_object(Bucket="bkt", Key="heads/x/config.json", Range="bytes=0-1")
    s3.list_objects_v2(Bucket="bkt", Prefix="heads/")
    s3.delete_object(Bucket="bkt", Key="heads/x/config.json")
    log = sagemaker_harness.requests
    assert log.operations("s3") == [
        "CreateBucket",
        "PutObject",
        "HeadObject",
        "GetObject",
        "ListObjectsV2",
        "DeleteObject",
    ]
    assert log.params("GetObject") == [
        {"Bucket": "bkt", "Key": "heads/x/config.json", "Range": "bytes=0-1"}
    ]
    assert log.params("ListObjectsV2")[0]["prefix"] == "heads/"


def test_multipart_uploads_are_named(sagemaker_harness: SageMakerHarness):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="bkt")
    up = s3.create_multipart_upload(Bucket="bkt", Key="k")
    part = s3.upload_part(
        Bucket="bkt", Key="k", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 10
    )
    s3.complete_multipart_upload(
        Bucket="bkt",
        Key="k",
        UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
    )
    assert sagemaker_harness.requests.operations("s3") == [
        "CreateBucket",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
    ]


def test_a_second_model_or_config_of_one_name_is_refused_as_sagemaker_does(
    sagemaker_harness: SageMakerHarness,
):
    """moto replaces them; SageMaker says ValidationException, "Cannot create already
    existing …" (as moto itself does for endpoints), and so does the harness."""
    from botocore.exceptions import ClientError

    sm = boto3.client("sagemaker", region_name="us-east-1")
    _create_model(sm, "m")
    arn = "arn:aws:sagemaker:us-east-1:123456789012"
    try:
        _create_model(sm, "m")
        raise AssertionError("a second CreateModel of one name was accepted")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "ValidationException"
        message = e.response["Error"]["Message"]
        assert message == f'Cannot create already existing model "{arn}:model/m".'
    variants = [{"VariantName": "a", "ModelName": "m", "InstanceType": "ml.g5.xlarge",
                 "InitialInstanceCount": 1}]  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=variants)
    try:
        sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=variants)
        raise AssertionError("a second CreateEndpointConfig of one name was accepted")
    except ClientError as e:
        assert e.response["Error"]["Message"] == (
            f'Cannot create already existing endpoint configuration "{arn}:endpoint-config/c".'
        )
    assert sagemaker_harness.resources().models == ("m",)


def test_a_rest_request_names_the_members_of_its_uri(sagemaker_harness: SageMakerHarness):
    # EventBridge Scheduler (rest-json) names a schedule only in its path,
    # `GET /schedules/{Name}?groupName=` (botocore's model): the record says which one.
    sch = boto3.client("scheduler", region_name="us-east-1")
    sch.create_schedule_group(Name="peagle")
    with contextlib.suppress(sch.exceptions.ResourceNotFoundException):
        sch.get_schedule(Name="my-endpoint", GroupName="peagle")
    with contextlib.suppress(sch.exceptions.ResourceNotFoundException):
        sch.delete_schedule(Name="my-endpoint", GroupName="peagle")
    log = sagemaker_harness.requests
    assert log.params("GetSchedule") == [{"Name": "my-endpoint", "GroupName": "peagle"}]
    (delete,) = log.params("DeleteSchedule")
    assert delete["Name"] == "my-endpoint" and delete["GroupName"] == "peagle"
    (group,) = log.params("CreateScheduleGroup")  # its ClientToken is botocore's
    assert group["Name"] == "peagle"
