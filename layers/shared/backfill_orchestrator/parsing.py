"""Bytes to a plain document, safely: strict YAML (one document, no duplicate keys, no
anchors/aliases, no tags) or strict JSON (no duplicate keys, no NaN). Every failure is a
located `InvalidConfigError` at `<root>`; nothing here raises anything else."""

from __future__ import annotations

import json
from typing import Any, Literal

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent

from backfill_orchestrator.config.errors import ROOT, ConfigIssue, InvalidConfigError

MAX_CONFIG_BYTES = 256 * 1024
ConfigFormat = Literal["yaml", "json"]


def _fail(message: str, source: str | None) -> InvalidConfigError:
    return InvalidConfigError([ConfigIssue(ROOT, message)], source=source)


class _StrictYamlLoader(yaml.SafeLoader):
    """SafeLoader minus the features that make YAML dangerous or surprising in a config."""

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            raise yaml.constructor.ConstructorError(
                None, None, "aliases are not allowed (they enable expansion bombs)", event.start_mark
            )
        if getattr(event, "anchor", None):
            raise yaml.constructor.ConstructorError(
                None, None, "anchors are not allowed (they enable expansion bombs)", event.start_mark
            )
        if isinstance(event, ScalarEvent | CollectionStartEvent) and event.tag not in (None, "!"):
            raise yaml.constructor.ConstructorError(
                None, None, f"tags are not allowed ({event.tag})", event.start_mark
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


def _load_yaml(text: str, source: str | None) -> Any:
    try:
        return yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - strict SafeLoader subclass
    except yaml.composer.ComposerError as error:
        if "single document" in f"{error.context} {error.problem}":
            raise _fail("expected one YAML document, found several", source) from None
        raise _fail(f"invalid YAML{_mark(error)}: {error.problem}", source) from None
    except yaml.MarkedYAMLError as error:
        raise _fail(f"invalid YAML{_mark(error)}: {error.problem}", source) from None
    except yaml.YAMLError as error:  # reader errors: control characters and the like
        raise _fail(f"invalid YAML: {error}", source) from None
    except RecursionError:
        raise _fail("invalid YAML: nested too deeply", source) from None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def load_json(text: str, source: str | None) -> Any:
    """Strict JSON (no duplicate keys, no NaN/Infinity); InvalidConfigError at `<root>` otherwise.
    The contracts read their documents with it too."""
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise _fail(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}", source) from None
    except ValueError as error:
        raise _fail(f"invalid JSON: {error}", source) from None
    except RecursionError:
        raise _fail("invalid JSON: nested too deeply", source) from None


def format_for(filename: str | None) -> ConfigFormat | None:
    """The format a file name implies, or None when it implies none."""
    if not filename:
        return None
    lowered = filename.lower()
    if lowered.endswith(".json"):
        return "json"
    if lowered.endswith((".yaml", ".yml")):
        return "yaml"
    return None


def decode_config_bytes(data: bytes, *, source: str | None = None, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    if len(data) > max_bytes:
        raise _fail(f"file is {len(data)} bytes; the limit is {max_bytes} bytes (256 KiB)", source)
    if b"\x00" in data:
        raise _fail("binary data, not a YAML or JSON text config", source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _fail(f"not valid UTF-8 (byte {error.start}: {error.reason})", source) from None
    return text


def load_document(
    data: bytes | str,
    *,
    fmt: ConfigFormat | None = None,
    source: str | None = None,
    max_bytes: int = MAX_CONFIG_BYTES,
) -> dict[str, Any]:
    """Parse config text into a mapping. `fmt` None sniffs: `{` starts JSON, anything else is YAML."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    text = decode_config_bytes(data, source=source, max_bytes=max_bytes)
    if not text.strip():
        raise _fail("empty document", source)
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "yaml"
    document = load_json(text, source) if fmt == "json" else _load_yaml(text, source)
    if document is None:
        raise _fail("empty document", source)
    if not isinstance(document, dict):
        kind = "a list" if isinstance(document, list) else f"a {type(document).__name__}"
        raise _fail(f"expected a mapping of config keys at the top, got {kind}", source)
    return document
