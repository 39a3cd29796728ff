"""One retry policy for AWS clients, as http.py is for HTTP: throttled calls back off and retry
inside the invocation (botocore's standard mode) before anything is declared failed."""

from typing import Any

from botocore.config import Config

AWS_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 8}, connect_timeout=5, read_timeout=15
)
# The package's DynamoDB items are built by boto3's TypeSerializer (dynamo.py), and DynamoDB
# validates every request itself: botocore walking each attribute value again before sending
# costs about 2.5 ms of CPU per 1 KB item (boto3 documents turning it off for performance).
# The tests' clients keep it (tests/support), so a malformed request still fails there.
DYNAMODB_CLIENT_CONFIG = AWS_CLIENT_CONFIG.merge(Config(parameter_validation=False))


def aws_client(service: str) -> Any:
    """A boto3 client of the deployment (its region and credentials) with the retry policy."""
    import boto3  # here: the package imports without boto3's start-up cost until a client is made

    config = DYNAMODB_CLIENT_CONFIG if service == "dynamodb" else AWS_CLIENT_CONFIG
    return boto3.client(service, config=config)  # type: ignore[call-overload]
