"""The Lambda context object, as the three functions' handlers (and powertools) read it."""

from __future__ import annotations

import time

from aws_lambda_powertools.utilities.typing import LambdaContext

DEFAULT_REQUEST_ID = "00000000-0000-0000-0000-000000000000"


class FakeLambdaContext(LambdaContext):
    """A function's name, the invocation's request id (Lambda's retries of one event reuse
    it) and the time left: `remaining_seconds` throughout, or counting down from it in real
    time with `counting_down` (deadline tests)."""

    def __init__(
        self,
        *,
        function_name: str = "backfill-trigger",
        request_id: str = DEFAULT_REQUEST_ID,
        remaining_seconds: float = 60.0,
        counting_down: bool = False,
    ) -> None:
        self._function_name = function_name
        self._function_version = "$LATEST"
        self._invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self._memory_limit_in_mb = 512
        self._aws_request_id = request_id
        self._log_group_name = f"/aws/lambda/{function_name}"
        self._log_stream_name = "tests"
        self._remaining = remaining_seconds
        self._ends_at = time.monotonic() + remaining_seconds if counting_down else None

    def get_remaining_time_in_millis(self) -> int:  # type: ignore[override]
        if self._ends_at is None:
            return int(self._remaining * 1000)
        return max(0, int((self._ends_at - time.monotonic()) * 1000))
