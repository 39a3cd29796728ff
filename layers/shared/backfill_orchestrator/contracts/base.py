"""What every contract shares: the base model, the versioned reader, and its one error.

A document that crosses a process (a DAG run conf, a plan, a run report, a result file, ...)
is read only through `parse_document`, which refuses an unknown or missing version first (one
clear issue rather than a page of field errors from another format), then validates the
model and reports every problem with its location (`steps[2].status: ...`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from backfill_orchestrator._compat import Self
from backfill_orchestrator.errors import ROOT, ConfigIssue, LocatedIssuesError, UserError
from backfill_orchestrator.parsing import ErrorFactory, issue_from_pydantic, load_json

DEFAULT_MAX_BYTES = 16 * 1024 * 1024


class InvalidDocumentError(LocatedIssuesError, UserError, ValueError):
    """A document that is not a valid `document` of the version this release reads; carries
    every located issue. One class for every contract, so each line names the document:
    `<source>: <document>: <location>: <message>`."""

    def render(self) -> str:
        return "\n".join(f"{self._prefix()}{self.document}: {issue}" for issue in self.issues)


class Contract(BaseModel):
    """A document we write and read: unknown keys are refused, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    document_name: ClassVar[str] = "document"
    version_field: ClassVar[str] = ""  # the key carrying the version; "" for none
    version: ClassVar[int] = 1  # the one version this release reads and writes
    version_required: ClassVar[bool] = True  # False: a document without the key is this version
    max_bytes: ClassVar[int] = DEFAULT_MAX_BYTES

    def __init_subclass__(
        cls,
        *,
        document_name: str | None = None,
        version_field: str | None = None,
        version: int | None = None,
        version_required: bool | None = None,
        max_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        """A document's header as class keywords (`class Plan(Contract, document_name="plan",
        version_field="plan_version", max_bytes=...)`); what is not given is inherited."""
        super().__init_subclass__(**kwargs)
        if document_name is not None:
            cls.document_name = document_name
        if version_field is not None:
            cls.version_field = version_field
        if version is not None:
            cls.version = version
        if version_required is not None:
            cls.version_required = version_required
        if max_bytes is not None:
            cls.max_bytes = max_bytes

    @classmethod
    def from_json(cls, data: bytes | str | Mapping[str, Any], *, source: str | None = None) -> Self:
        return parse_document(cls, data, source=source)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2) + "\n"

    @classmethod
    def taken_from(cls, source: BaseModel, **update: Any) -> Self:
        """This contract from the fields it shares with `source` (a summary of a larger
        document), `update` giving the others."""
        shared = source.model_dump(include=set(cls.model_fields) - update.keys())
        return cls.model_validate({**shared, **update})


M = TypeVar("M", bound=Contract)


def _load(model: type[Contract], data: bytes | str, *, source: str | None, fail: ErrorFactory) -> Any:
    size = len(data.encode() if isinstance(data, str) else data)
    if size > model.max_bytes:
        raise fail(
            [ConfigIssue(ROOT, f"document is {size} bytes; the limit is {model.max_bytes}")], source=source
        )
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise fail([ConfigIssue(ROOT, f"not UTF-8 text (byte {error.start})")], source=source) from None
    if not text.strip():
        raise fail([ConfigIssue(ROOT, "empty document")], source=source)
    return load_json(text, source, error=fail)


def version_issue(model: type[Contract], document: Mapping[str, Any]) -> ConfigIssue | None:
    """The one issue of a document of another version (or none), checked before the fields."""
    key = model.version_field
    if not key:
        return None
    if key not in document:
        if not model.version_required:
            return None
        return ConfigIssue(
            key,
            f"missing: this release reads {model.document_name} version {model.version} (an older format?)",
        )
    found = document[key]
    if type(found) is not int or found != model.version:
        return ConfigIssue(
            key,
            f"unsupported version {found!r}: this release reads {model.document_name} version {model.version} only",
        )
    return None


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model inside a field's annotation (`X`, `X | None`, `list[X]`, `dict[str, X]`), and
    whether it sits behind a dict key."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    args = get_args(annotation)
    if get_origin(annotation) is dict and len(args) == 2:
        return _nested_model(args[1])[0], True
    for arg in args:
        found = _nested_model(arg)
        if found[0] is not None:
            return found
    return None, False


def _model_at(model: type[BaseModel], path: Sequence[str | int]) -> type[BaseModel] | None:
    current: type[BaseModel] | None = model
    behind_dict_key = False
    for part in path:
        if isinstance(part, int):
            continue
        if behind_dict_key:  # the dict's own key, not a field
            behind_dict_key = False
            continue
        field = current.model_fields.get(part) if current is not None else None
        if field is None:
            return None
        current, behind_dict_key = _nested_model(field.annotation)
    return current


def _unknown_key(model: type[Contract]) -> Callable[[Sequence[str | int]], str]:
    """`unknown key; did you mean 'error'?`, at any depth of the document."""

    def message(loc: Sequence[str | int]) -> str:
        owner = _model_at(model, loc[:-1])
        if owner is None:
            return "unknown key"
        close = difflib.get_close_matches(str(loc[-1]), list(owner.model_fields), n=1, cutoff=0.6)
        if close:
            return f"unknown key; did you mean '{close[0]}'?"
        return f"unknown key; known keys: {', '.join(owner.model_fields)}"

    return message


def parse_document(model: type[M], data: bytes | str | Mapping[str, Any], *, source: str | None = None) -> M:
    """JSON bytes or text, or an already-parsed mapping, to `model`; raises
    InvalidDocumentError naming the document, the source and every located problem."""

    fail = partial(InvalidDocumentError, document=model.document_name)
    document = data if isinstance(data, Mapping) else _load(model, data, source=source, fail=fail)
    if not isinstance(document, Mapping):
        raise fail(
            [ConfigIssue(ROOT, f"expected a JSON object at the top, got {type(document).__name__}")],
            source=source,
        )
    issue = version_issue(model, document)
    if issue is not None:
        raise fail([issue], source=source)
    try:
        return model.model_validate(dict(document))
    except ValidationError as error:
        unknown = _unknown_key(model)
        issues = [issue_from_pydantic(e, unknown_key=unknown) for e in error.errors(include_url=False)]
        raise fail(issues, source=source) from None
