"""boto3 clients for the client functions: an explicit client wins, then the caller's boto3
Session, then boto3's default chain (on Databricks: the cluster's instance profile). Nothing
is read from notebook globals."""

from __future__ import annotations

from typing import Any, Literal

Service = Literal["dynamodb", "s3", "sts"]  # what the client functions use


def aws_client(service: Service, *, client: Any = None, session: Any = None) -> Any:
    if client is not None:
        return client
    if session is not None:
        return session.client(service)
    import boto3

    return boto3.client(service)
