"""The trace id that follows one backfill across the Lambda, the DAG and the Spark job: the
X-Ray root of the trigger's invocation, passed on in the DAG run conf (`trace_id`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_ROOT = re.compile(r"(?:^|;)Root=([A-Za-z0-9-]{1,64})(?:;|$)")


def current_trace_id(environ: Mapping[str, str] | None = None) -> str | None:
    """`1-5759e988-bd862e3fe1be46a994272793` from Lambda's `_X_AMZN_TRACE_ID`, or None."""
    header = (environ if environ is not None else os.environ).get("_X_AMZN_TRACE_ID", "")
    found = _ROOT.search(header)
    return found.group(1) if found else None
