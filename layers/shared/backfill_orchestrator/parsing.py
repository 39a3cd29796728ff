"""Every document we validate is read one way: text to a plain mapping, safely, then to its
pydantic model, then its own cross-checks, each problem a located `ConfigIssue`, all raised
together as the caller's `LocatedIssuesError` (InvalidConfigError, InvalidCatalogError, ...).

    parse_validated(data, Model, error=InvalidRulesError, source=uri, max_bytes=..., model_checks=...)

The text step is `load_document`: strict YAML (one document, no duplicate keys, no
anchors/aliases, no tags) or strict JSON (no duplicate keys, no NaN). Every failure there is
located at `<root>`; nothing here raises anything but the caller's error class. The YAML parser
is `_load_yaml` alone, so changing it is a change in one place."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

import yaml
from pydantic import BaseModel, ValidationError
from yaml.error import Mark
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent

from backfill_orchestrator.errors import ROOT, ConfigIssue, LocatedIssuesError, format_location

DocumentFormat = Literal["yaml", "json"]
# The document's error class, called as error(issues, source=...): a LocatedIssuesError subclass,
# or a partial of one that fixes more (the contracts' document name).
ErrorFactory = Callable[..., LocatedIssuesError]
M = TypeVar("M", bound=BaseModel)
_PREFIXES = ("Value error, ", "Assertion failed, ")


def _fail(message: str, source: str | None, error: ErrorFactory) -> LocatedIssuesError:
    return error([ConfigIssue(ROOT, message)], source=source)


class _StrictYamlLoader(yaml.SafeLoader):
    """SafeLoader minus the features that make YAML dangerous or surprising in a config."""

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "aliases are not allowed (they enable expansion bombs)",
                cast(Mark, event.start_mark),
            )
        if getattr(event, "anchor", None):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "anchors are not allowed (they enable expansion bombs)",
                cast(Mark, event.start_mark),
            )
        if isinstance(event, ScalarEvent | CollectionStartEvent) and event.tag not in (None, "!"):
            raise yaml.constructor.ConstructorError(
                None, None, f"tags are not allowed ({event.tag})", cast(Mark, event.start_mark)
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):  # noqa: ANN001
        # No merge keys (`<<`): they stay ordinary keys and are rejected as unknown later.
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | bool | float) and key is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, "mapping keys must be plain scalars", key_node.start_mark
                )
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


# Dates stay strings so that the model can say exactly which one is not a real date
# (PyYAML would otherwise raise on 2021-02-30 with no location); `<<` stays a plain key.
_DROPPED_RESOLVERS = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge"}
_StrictYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _DROPPED_RESOLVERS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictYamlLoader.add_constructor("tag:yaml.org,2002:map", _StrictYamlLoader.construct_mapping)


def _mark(error: yaml.MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""


def _load_yaml(text: str, source: str | None, error: ErrorFactory) -> Any:
    try:
        return yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - strict SafeLoader subclass
    except yaml.composer.ComposerError as problem:
        if "single document" in f"{problem.context} {problem.problem}":
            raise _fail("expected one YAML document, found several", source, error) from None
        raise _fail(f"invalid YAML{_mark(problem)}: {problem.problem}", source, error) from None
    except yaml.MarkedYAMLError as problem:
        raise _fail(f"invalid YAML{_mark(problem)}: {problem.problem}", source, error) from None
    except yaml.YAMLError as problem:  # reader errors: control characters and the like
        raise _fail(f"invalid YAML: {problem}", source, error) from None
    except RecursionError:
        raise _fail("invalid YAML: nested too deeply", source, error) from None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def load_json(text: str, source: str | None, *, error: ErrorFactory) -> Any:
    """Strict JSON (no duplicate keys, no NaN/Infinity); `error` at `<root>` otherwise.
    The contracts read their documents with it too."""
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as problem:
        raise _fail(
            f"invalid JSON at line {problem.lineno}, column {problem.colno}: {problem.msg}", source, error
        ) from None
    except ValueError as problem:
        raise _fail(f"invalid JSON: {problem}", source, error) from None
    except RecursionError:
        raise _fail("invalid JSON: nested too deeply", source, error) from None


def format_for(filename: str | None) -> DocumentFormat | None:
    """The format a file name implies, or None when it implies none."""
    if not filename:
        return None
    lowered = filename.lower()
    if lowered.endswith(".json"):
        return "json"
    if lowered.endswith((".yaml", ".yml")):
        return "yaml"
    return None


def _size(limit: int) -> str:
    """262144 -> '256 KiB', 8388608 -> '8 MiB'."""
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit // 1024} KiB"


def _decode(data: bytes, *, source: str | None, max_bytes: int, error: ErrorFactory) -> str:
    if len(data) > max_bytes:
        raise _fail(
            f"file is {len(data)} bytes; the limit is {max_bytes} bytes ({_size(max_bytes)})", source, error
        )
    if b"\x00" in data:
        raise _fail("binary data, not a YAML or JSON text config", source, error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise _fail(f"not valid UTF-8 (byte {problem.start}: {problem.reason})", source, error) from None


def load_document(
    data: bytes | str,
    *,
    error: ErrorFactory,
    max_bytes: int,
    fmt: DocumentFormat | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Parse document text into a mapping; every problem raises `error` located at `<root>`.
    `fmt` None sniffs: `{` starts JSON, anything else is YAML."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    text = _decode(data, source=source, max_bytes=max_bytes, error=error)
    if not text.strip():
        raise _fail("empty document", source, error)
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "yaml"
    document = load_json(text, source, error=error) if fmt == "json" else _load_yaml(text, source, error)
    if document is None:
        raise _fail("empty document", source, error)
    if not isinstance(document, dict):
        kind = "a list" if isinstance(document, list) else f"a {type(document).__name__}"
        raise _fail(f"expected a mapping of config keys at the top, got {kind}", source, error)
    return document


# -- the model step ------------------------------------------------------------------------------
def _short(value: Any) -> str | None:
    if isinstance(value, dict | list):
        return None
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def issue_from_pydantic(
    error: Mapping[str, Any],
    *,
    loc: Sequence[str | int] | None = None,
    unknown_key: Callable[[Sequence[str | int]], str] = lambda loc: "unknown key",
) -> ConfigIssue:
    """One pydantic error (`ValidationError.errors()` item) as a located issue in our wording:
    `field required`, `unknown key...`, our validators' messages without pydantic's prefix, and
    the offending value for the rest. `loc` overrides the error's own location."""
    loc = tuple(error["loc"] if loc is None else loc)
    kind = error["type"]
    location = format_location(loc)
    if kind == "missing":
        return ConfigIssue(location, "field required")
    if kind == "extra_forbidden":
        return ConfigIssue(location, unknown_key(loc))
    message = error["msg"]
    for prefix in _PREFIXES:
        if message.startswith(prefix):
            return ConfigIssue(location, message[len(prefix) :])
    message = message[:1].lower() + message[1:]
    shown = _short(error.get("input"))
    if shown is not None and kind not in ("too_long", "too_short"):
        message = f"{message}, got {shown}"
    return ConfigIssue(location, message)


def _no_issues(_: Any) -> Iterable[ConfigIssue]:
    return ()


def parse_validated(
    data: bytes | str | Mapping[str, Any],
    model: type[M],
    *,
    error: ErrorFactory,
    max_bytes: int,
    source: str | None = None,
    fmt: DocumentFormat | None = None,
    issue: Callable[[Mapping[str, Any]], ConfigIssue] = issue_from_pydantic,
    context: Any = None,
    document_checks: Callable[[Mapping[str, Any]], Iterable[ConfigIssue]] = _no_issues,
    model_checks: Callable[[M], Iterable[ConfigIssue]] = _no_issues,
) -> M:
    """Text (or an already-parsed mapping) to a valid `model`, or `error` with every located issue.

    The model's own issues (through `issue`, pydantic's errors in our wording) and the
    `document_checks` on the raw mapping are reported together; the `model_checks` (rules
    between fields of a valid model: duplicates, references) only once both found none."""
    document = (
        load_document(data, error=error, max_bytes=max_bytes, fmt=fmt, source=source)
        if isinstance(data, bytes | str)
        else data
    )
    if not isinstance(document, Mapping):
        raise _fail("expected a mapping of config keys at the top", source, error)
    issues: list[ConfigIssue] = []
    parsed: M | None = None
    try:
        parsed = model.model_validate(document, context=context)
    except ValidationError as invalid:
        issues.extend(issue(problem) for problem in invalid.errors(include_url=False))
    issues.extend(document_checks(document))
    if parsed is not None and not issues:
        issues.extend(model_checks(parsed))
    if issues:
        raise error(issues, source=source)
    assert parsed is not None
    return parsed
