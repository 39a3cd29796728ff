"""One retry policy for AWS clients, as http.py is for HTTP: throttled calls back off and retry
inside the invocation (botocore's standard mode) before anything is declared failed."""

from typing import Any

from botocore.config import Config

AWS_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 8}, connect_timeout=5, read_timeout=15
)


def aws_client(service: str) -> Any:
    """A boto3 client of the deployment (its region and credentials) with the retry policy."""
    import boto3  # here: the package imports without boto3's start-up cost until a client is made

    return boto3.client(service, config=AWS_CLIENT_CONFIG)  # type: ignore[call-overload]
