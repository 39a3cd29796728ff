"""Keep secrets out of logs, whichever library writes the line.

Every secret the SecretReader hands out is registered here (in this process only), and a
logging filter on the handlers formats each record first, then replaces every registered
value and every well-known secret shape with `***`:

- Slack webhook paths (`hooks.slack.com/services/...`, also a bare `/services/T.../B.../...`
  path as urllib3's retry warning logs it), `xox?-` tokens, `xapp-` tokens;
- `Authorization: Bearer|Basic ...` and a bare `Bearer <token>`;
- passwords in URLs (`scheme://user:pass@host`);
- Secrets Manager's `SecretString` / `SecretBinary` values (botocore logs responses at DEBUG);
- `password=`, `api_key=`, `token=`, `routing_key=`, `client_secret=` style pairs.

The filter sits on handlers, not loggers, because a logger's filters do not see records that
propagate from child loggers (urllib3, botocore, slack_sdk...). `install()` is idempotent and
cheap: the Lambda handlers call it on every invocation so a handler added after import (the
runtime's, a test's capture) is covered too."""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

REDACTED = "***"
MIN_SECRET_LENGTH = 4  # shorter values would blank out ordinary words; none of our secrets is that short

_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Secrets Manager's answer as botocore logs it at DEBUG (JSON, or its bytes repr with
    # doubled backslashes): the value runs to the first quote no backslash escapes.
    (
        re.compile(r"""(Secret(?:String|Binary)\\*["']?\s*:\s*\\*(["']))(?:(?!\2)[^\\]|\\+.)*"""),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[^\s'\"<>),;]+"), r"\1" + REDACTED),
    (re.compile(r"(/services/)T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"), r"\1" + REDACTED),
    (re.compile(r"\b(xox[a-z]|xapp)-[A-Za-z0-9-]+"), r"\1-" + REDACTED),
    (
        re.compile(r"(?i)\b(Authorization['\"]?\s*[:=]\s*['\"]?)(Bearer|Basic|Token)\s+[^\s'\",}]+"),
        r"\1\2 " + REDACTED,
    ),
    (re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'\"]+):[^/\s@'\"]+@"), r"\1:" + REDACTED + "@"),
    (
        re.compile(
            r"(?i)(?<![/.])\b((?:password|passwd|api[_-]?key|apikey|access[_-]?token|bot[_-]?token|token|routing[_-]?key"
            r"|client[_-]?secret|secret[_-]?(?:access[_-]?)?key)['\"]?\s*[:=]\s*['\"]?)(?!\*\*\*)[^\s'\"&,;}]+"
        ),
        r"\1" + REDACTED,
    ),
)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def register_secret(value: str | None) -> None:
    """Redact `value` (and the forms it takes in URLs, JSON and headers) from now on."""
    if not value:
        return
    forms = {value, quote(value, safe=""), json.dumps(value)[1:-1]}
    if "://" in value:  # a URL secret (a Slack webhook): its path is what HTTP libraries log
        parts = urlsplit(value)
        forms |= {parts.path, parts.path.rstrip("/").rsplit("/", 1)[-1], parts.query}
    global _pattern
    with _lock:
        before = len(_secrets)
        _secrets.update(form for form in forms if len(form) >= MIN_SECRET_LENGTH and form != "/")
        if len(_secrets) != before:
            # Longest first so a value is replaced whole, not a registered part of it.
            alternatives = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(secret) for secret in alternatives))


def register_basic_credentials(username: str, password: str) -> None:
    """The password, and the `Basic` header value made from both."""
    register_secret(password)
    register_secret(base64.b64encode(f"{username}:{password}".encode()).decode())


def forget_secrets() -> None:
    """Tests only: start from no registered secrets."""
    global _pattern
    with _lock:
        _secrets.clear()
        _pattern = None


def redact(text: str) -> str:
    """`text` with registered secrets and well-known secret shapes replaced by `***`."""
    if not text:
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for shape, replacement in _SHAPES:
        text = shape.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Formats the record's message (msg % args) and exception text, redacts them and puts
    them back as plain text, for handlers that keep records rather than format them. The
    live exception stays on the record for structured formatters; `install` also redacts
    every handler's formatted output, which covers what they render from it."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) or record.args:  # a dict message stays structured
            try:
                message = record.getMessage()
            except Exception:  # a broken format string: keep what was given, still redacted
                message = f"{record.msg!r} {record.args!r}"
            record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()


def install(*loggers: logging.Logger | object) -> None:
    """Redact on the root logger's handlers, on Python's last-resort handler and on the
    handlers of `loggers` (a powertools Logger's handler does not hang off the root logger):
    the filter above, and the handler's formatted output (format, then redact: whatever the
    formatter adds - exception text, extra keys - is covered). Idempotent."""
    handlers: list[logging.Handler] = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for logger in loggers:
        handlers.extend(_handlers_of(logger))
    for handler in handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
        if not getattr(handler.format, "redacting", False):
            handler.format = _redacting_format(handler.format)  # type: ignore[method-assign]


def _redacting_format(format_record):  # noqa: ANN001, ANN202 - wraps Handler.format
    # On the handler instance (not by replacing its formatter), so a powertools Logger still
    # finds its own formatter to append keys to.
    def format(record: logging.LogRecord) -> str:
        return redact(format_record(record))

    format.redacting = True  # type: ignore[attr-defined]
    return format


def _handlers_of(logger: object) -> Iterable[logging.Handler]:
    # A powertools Logger wraps a stdlib logger (`_logger`) and names its handler.
    inner = getattr(logger, "_logger", logger)
    found = list(getattr(inner, "handlers", []))
    registered = getattr(logger, "registered_handler", None)
    if isinstance(registered, logging.Handler) and registered not in found:
        found.append(registered)
    return found
