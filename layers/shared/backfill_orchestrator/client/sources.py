"""Config sources as notebooks hold them: a dict, YAML/JSON text, or a path.

A string is a path when it looks like one (one line, and it starts with `/`, `./`, `../`,
`~`, `dbfs:`, `s3://`, `file:`, has a `scheme://`, ends in .yaml/.yml/.json, or names an
existing file); it is then read through `documents` (local files, Unity Catalog volumes
`/Volumes/...`, `dbfs:/` through the `/dbfs` mount, `s3://`), and a missing one is "no such
file: ...", never a YAML parse error of the path's text."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfill_orchestrator import documents
from backfill_orchestrator.config import BackfillConfig, backfill_id, parse_config
from backfill_orchestrator.config.model import MAX_CONFIG_BYTES
from backfill_orchestrator.config.validate import DEFAULT_POLICY, ConfigPolicy
from backfill_orchestrator.parsing import format_for

ConfigSource = dict[str, Any] | str | bytes | os.PathLike[str]
_PATH_STARTS = ("/", "./", "../", "~", "dbfs:", "file:", *documents.S3_SCHEMES)
_PATH_ENDS = (".yaml", ".yml", ".json")


class ConfigFileNotFoundError(documents.DocumentNotFoundError):
    """The config path names nothing (a typo, a file not uploaded yet)."""


@dataclass(frozen=True)
class PreparedConfig:
    config: BackfillConfig
    backfill_id: str
    body: bytes
    extension: str  # ".yaml" or ".json"


def looks_like_path(text: str) -> bool:
    stripped = text.strip()
    if not stripped or "\n" in stripped or len(stripped) > 4096:
        return False
    if stripped.startswith(_PATH_STARTS) or "://" in stripped or stripped.lower().endswith(_PATH_ENDS):
        return True
    return Path(stripped).is_file()


def read_config_file(location: str | os.PathLike[str], *, s3_client: Any = None) -> tuple[bytes, str]:
    """(bytes, the location as given). Over the size limit it reads one byte more, so the
    config's located size error is reported like any other."""
    uri = os.fspath(location).strip()
    if uri.startswith("~"):
        uri = str(Path(uri).expanduser())
    try:
        body = documents.read_bytes(uri, max_bytes=MAX_CONFIG_BYTES, over_limit="keep", s3_client=s3_client)
    except documents.DocumentNotFoundError:
        raise ConfigFileNotFoundError(f"no such file: {uri}") from None
    return body, uri


def prepare_bytes(
    body: bytes, *, source: str, fmt: str | None = None, policy: ConfigPolicy = DEFAULT_POLICY
) -> PreparedConfig:
    """Validate config bytes; `fmt` None takes it from `source`'s extension, else sniffs."""
    fmt = fmt or format_for(source) or ("json" if body.lstrip().startswith(b"{") else "yaml")
    config = parse_config(body, fmt=fmt, source=source, policy=policy)  # type: ignore[arg-type]
    return PreparedConfig(config, backfill_id(config), body, ".json" if fmt == "json" else ".yaml")


def prepare_config(
    source: ConfigSource, *, policy: ConfigPolicy = DEFAULT_POLICY, s3_client: Any = None, session: Any = None
) -> PreparedConfig:
    """Validate a dict, YAML/JSON text or a path; keep the original bytes for upload."""
    if isinstance(source, dict):
        config = parse_config(source, policy=policy, source="<dict>")
        body = json.dumps(source, indent=2, default=str).encode()
        return PreparedConfig(config, backfill_id(config), body, ".json")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and looks_like_path(source)):
        location = os.fspath(source)
        if s3_client is None and session is not None and documents.is_s3(location.strip()):
            s3_client = session.client("s3")
        body, uri = read_config_file(location, s3_client=s3_client)
        return prepare_bytes(body, source=uri, policy=policy)
    body = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    return prepare_bytes(body, source="<text>", policy=policy)
