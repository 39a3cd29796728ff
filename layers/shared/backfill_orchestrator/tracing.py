"""The trace id that follows one backfill across the Lambda, the DAG and the Spark job: the
X-Ray root of the trigger's invocation, passed on in the DAG run conf (`trace_id`); and the
Lambda handlers' Tracer, built only when tracing is on."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

Handler = TypeVar("Handler", bound=Callable[..., Any])

_ROOT = re.compile(r"(?:^|;)Root=([A-Za-z0-9-]{1,64})(?:;|$)")


def current_trace_id(environ: Mapping[str, str] | None = None) -> str | None:
    """`1-5759e988-bd862e3fe1be46a994272793` from Lambda's `_X_AMZN_TRACE_ID`, or None."""
    header = (environ if environ is not None else os.environ).get("_X_AMZN_TRACE_ID", "")
    found = _ROOT.search(header)
    return found.group(1) if found else None


def tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Powertools' own rule (`Tracer._is_tracer_disabled`), decided without building a Tracer:
    on in Lambda (not SAM local, not Chalice) unless POWERTOOLS_TRACE_DISABLED is true."""
    from aws_lambda_powertools.shared import constants
    from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

    env = environ if environ is not None else os.environ
    if resolve_truthy_env_var_choice(env=env.get(constants.TRACER_DISABLED_ENV, "false")):
        return False
    in_emulator = env.get(constants.SAM_LOCAL_ENV) or env.get(constants.CHALICE_LOCAL_ENV)
    return bool(env.get(constants.LAMBDA_TASK_ROOT_ENV)) and not in_emulator


def lambda_tracer(**options: Any) -> Tracer | None:
    """A powertools Tracer when tracing is on, else None. Building one imports the X-Ray SDK
    (150-175 ms of cold start), even when tracing turns out to be disabled."""
    if not tracing_enabled():
        return None
    from aws_lambda_powertools import Tracer

    return Tracer(**options)


def traced_handler(tracer: Tracer | None) -> Callable[[Handler], Handler]:
    """`tracer.capture_lambda_handler` (response not captured), or nothing without a tracer."""
    if tracer is None:
        return lambda handler: handler
    return tracer.capture_lambda_handler(capture_response=False)
