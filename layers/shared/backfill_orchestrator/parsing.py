"""Every document we validate is read one way: text to a plain mapping, safely, then to its
pydantic model, then its own cross-checks, each problem a located `ConfigIssue`, all raised
together as the caller's `LocatedIssuesError` (InvalidConfigError, InvalidCatalogError, ...).

    RULES_DOCUMENT = DocumentKind(Model, error=InvalidRulesError, max_bytes=..., model_checks=...)
    RULES_DOCUMENT.parse(data, source=uri)

The text step is `load_document`: strict YAML 1.2 (ruamel.yaml; one document, no duplicate
keys, no anchors/aliases, no tags, dates kept as text) or strict JSON (no duplicate keys, no
NaN). Its failures are located at `<root>`, except plain scalars that YAML 1.1 and 1.2 read
differently (`010`, `yes`, `on`, `1:30`, `1_000`, `0o10`), each refused at its own place with the
quoted form as the hint. Nothing here raises anything but the caller's error class. The YAML
parser is `_load_yaml` alone, so changing it is a change in one place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer, ComposerError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from backfill_orchestrator.errors import ROOT, ConfigIssue, LocatedIssuesError, UserError, format_location

DocumentFormat = Literal["yaml", "json"]
# The document's error class, called as error(issues, source=...): a LocatedIssuesError subclass,
# or a partial of one that fixes more (the contracts' document name).
ErrorFactory = Callable[..., LocatedIssuesError]
M = TypeVar("M", bound=BaseModel)
_PREFIXES = ("Value error, ", "Assertion failed, ")


def _fail(message: str, source: str | None, error: ErrorFactory) -> LocatedIssuesError:
    return error([ConfigIssue(ROOT, message)], source=source)


# -- YAML: version 1.2 (ruamel.yaml), strict, ambiguous scalars refused ------------------------
class _StrictComposer(Composer):
    """ruamel's composer minus the features that make YAML dangerous or surprising in a config:
    aliases and anchors (expansion bombs) and explicit tags (`!!python/object`, `!!binary`)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            raise ComposerError(
                None, None, "aliases are not allowed (they enable expansion bombs)", event.start_mark
            )
        if getattr(event, "anchor", None):
            raise ComposerError(
                None, None, "anchors are not allowed (they enable expansion bombs)", event.start_mark
            )
        tag = getattr(event, "tag", None)
        if isinstance(event, ScalarEvent | CollectionStartEvent) and tag not in (None, "!"):
            raise ComposerError(None, None, f"tags are not allowed ({tag})", event.start_mark)
        return super().compose_node(parent, index)


# Plain scalars that YAML 1.1 (PyYAML, most older tools) and YAML 1.2 read differently, or
# that look like one type and are another: each is refused where it stands, with the quoted
# form as the hint (docs/config.md, "Parsing and errors").
_OLD_BOOLEANS = frozenset({"y", "yes", "n", "no", "on", "off"})
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]+$")  # 1.1: octal (010 is 8); 1.2: decimal (10)
_PREFIXED = re.compile(r"^[-+]?0[bo][0-9a-fA-F_]+$")  # 0b1010 (1.1 only), 0o10 (1.2 only)
_UNDERSCORED = re.compile(r"^[-+]?(?:[0-9][0-9]*_[0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?$")  # 1.1: 1_000
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")  # 1.1: 1:30 is 90
_TEXT_TAGS = frozenset({"tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge"})


def _ambiguity(text: str, *, key: bool = False) -> str | None:
    """Why a plain scalar is ambiguous, with the unambiguous spellings; None when it is not.
    A key is always meant as text, so its hint is the quoted form alone."""
    quoted = f"'{text}'"
    if text.lower() in _OLD_BOOLEANS:
        meaning = "true" if text.lower() in ("y", "yes", "on") else "false"
        why = f"YAML 1.1 reads it as {meaning}, YAML 1.2 as text"
        return f"{why}: write {quoted}" if key else f"{why}: write {meaning}, or {quoted} for text"
    number: int | None = None
    if _LEADING_ZERO.match(text):
        why = "a leading zero is octal in YAML 1.1"
        number = int(text.replace("_", ""), 10)
    elif _SEXAGESIMAL.match(text):
        why = "YAML 1.1 reads it as a base-60 number"
    elif _PREFIXED.match(text):
        why = "YAML 1.1 and 1.2 read it differently"
        number = int(text.replace("_", ""), 0)
    elif _UNDERSCORED.match(text):
        why = "YAML 1.1 and 1.2 read it differently"
        plain = text.replace("_", "")
        number = int(plain) if plain.lstrip("+-").isdigit() else None
    else:
        return None
    if key or number is None:
        return f"{why}: write {quoted}"
    return f"{why}: write {number} for the number, or {quoted} for text"


def _mark(problem: YAMLError) -> str:
    mark = getattr(problem, "problem_mark", None) or getattr(problem, "context_mark", None)
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""


class _Builder:
    """Composed nodes to plain values: mappings with scalar keys and no duplicates, lists, and
    scalars as YAML 1.2 reads them, except that dates stay text (the model says exactly which
    one is not a real date) and ambiguous plain scalars are collected as located issues."""

    def __init__(self, constructor: Any) -> None:
        self.issues: list[ConfigIssue] = []
        self._scalars = constructor  # ruamel's, for the scalars it reads as 1.2 does (ints, floats, .inf)

    def value(self, node: Node, path: tuple[str | int, ...]) -> Any:
        if isinstance(node, MappingNode):
            mapping: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, ScalarNode):
                    raise _YamlProblem("mapping keys must be plain scalars", key_node)
                key = self.scalar(key_node, path, key=True)
                if key in mapping:
                    raise _YamlProblem(f"duplicate key {key!r}", key_node)
                mapping[key] = self.value(value_node, (*path, str(key)))
            return mapping
        if isinstance(node, SequenceNode):
            return [self.value(item, (*path, index)) for index, item in enumerate(node.value)]
        if not isinstance(node, ScalarNode):
            raise _YamlProblem(f"unexpected node {type(node).__name__}", node)
        return self.scalar(node, path)

    def scalar(self, node: ScalarNode, path: tuple[str | int, ...], *, key: bool = False) -> Any:
        if node.style is not None:  # quoted, literal or folded: always text
            return node.value
        text = node.value
        why = _ambiguity(text, key=key)
        if why is not None:
            mark = node.start_mark
            where = (*path, text) if key else path
            self.issues.append(
                ConfigIssue(
                    format_location(where) if where else ROOT,
                    f"ambiguous YAML {'key' if key else 'value'} {text} "
                    f"(line {mark.line + 1}, column {mark.column + 1}): {why}",
                )
            )
            return text
        if node.tag in _TEXT_TAGS:
            return text
        return self._scalars.construct_object(node)


class _YamlProblem(UserError):
    """A located YAML problem found while building values; `_load_yaml` turns it into the caller's error."""

    def __init__(self, message: str, node: Node):
        mark = node.start_mark
        super().__init__(f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {message}")


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)  # YAML 1.2; one per call: a YAML object is not thread-safe
    yaml.Composer = _StrictComposer
    return yaml


def _load_yaml(text: str, source: str | None, error: ErrorFactory) -> Any:
    try:
        yaml = _yaml()
        node = yaml.compose(text)
        if node is None:
            return None
        builder = _Builder(yaml.constructor)
        document = builder.value(node, ())
    except ComposerError as problem:
        if "single document" in f"{problem.context} {problem.problem}":
            raise _fail("expected one YAML document, found several", source, error) from None
        raise _fail(f"invalid YAML{_mark(problem)}: {problem.problem}", source, error) from None
    except MarkedYAMLError as problem:
        raise _fail(f"invalid YAML{_mark(problem)}: {problem.problem}", source, error) from None
    except YAMLError as problem:  # reader errors: control characters and the like
        raise _fail(f"invalid YAML: {problem}", source, error) from None
    except _YamlProblem as problem:
        raise _fail(str(problem), source, error) from None
    except RecursionError:
        raise _fail("invalid YAML: nested too deeply", source, error) from None
    if builder.issues:
        raise error(builder.issues, source=source)
    return document


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


def too_large(size: int, limit: int) -> str:
    """How a file over its size limit is refused, wherever it is measured."""
    return f"file is {size} bytes; the limit is {limit} bytes ({_size(limit)})"


def _decode(data: bytes, *, source: str | None, max_bytes: int, error: ErrorFactory) -> str:
    if len(data) > max_bytes:
        raise _fail(too_large(len(data), max_bytes), source, error)
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


@dataclass(frozen=True)
class DocumentKind(Generic[M]):
    """How one kind of document is read: its model, its error class (called as
    `error(issues, source=...)`), its size limit, pydantic's errors in its wording (`issue`), the
    checks on the raw mapping and the rules between fields of a valid model (duplicates,
    references)."""

    model: type[M]
    error: ErrorFactory
    max_bytes: int
    issue: Callable[[Mapping[str, Any]], ConfigIssue] = issue_from_pydantic
    document_checks: Callable[[Mapping[str, Any]], Iterable[ConfigIssue]] = _no_issues
    model_checks: Callable[[M], Iterable[ConfigIssue]] = _no_issues

    def parse(
        self,
        data: bytes | str | Mapping[str, Any],
        *,
        source: str | None = None,
        fmt: DocumentFormat | None = None,
        context: Any = None,
    ) -> M:
        """Text (or an already-parsed mapping) to a valid model, or `error` with every located issue.

        The model's own issues and the `document_checks` are reported together; the
        `model_checks` only once both found none."""
        document = (
            load_document(data, error=self.error, max_bytes=self.max_bytes, fmt=fmt, source=source)
            if isinstance(data, bytes | str)
            else data
        )
        if not isinstance(document, Mapping):
            raise _fail("expected a mapping of config keys at the top", source, self.error)
        issues: list[ConfigIssue] = []
        parsed: M | None = None
        try:
            parsed = self.model.model_validate(document, context=context)
        except ValidationError as invalid:
            issues.extend(self.issue(problem) for problem in invalid.errors(include_url=False))
        issues.extend(self.document_checks(document))
        if parsed is not None and not issues:
            issues.extend(self.model_checks(parsed))
        if issues:
            raise self.error(issues, source=source)
        assert parsed is not None
        return parsed


def positive(text: str) -> int:
    """A command-line count of at least 1 (an argparse `type`), for the CLI and the Spark jobs."""
    import argparse  # here: the Lambdas import this module, and argparse is not on their path

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
