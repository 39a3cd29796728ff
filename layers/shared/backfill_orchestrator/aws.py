"""One retry policy for AWS clients, as http.py is for HTTP: throttled calls back off and retry
inside the invocation (botocore's standard mode) before anything is declared failed."""

from botocore.config import Config

AWS_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 8}, connect_timeout=5, read_timeout=15
)
