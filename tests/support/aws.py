"""AWS for the tests: resources for moto, built from template.yaml so tests and infrastructure
cannot drift (one reader of the template, `backfill_local.template_tables`, which the demo uses
too), and botocore's data files parsed once per test process.

    create_table(dynamodb, "StatusTable", table_name="status")   # keys, attributes, indexes
"""

from __future__ import annotations

from typing import Any

from botocore.loaders import JSONFileLoader, Loader

from backfill_local.template_tables import TEMPLATE, create_table, table_definition, template

__all__ = ["TEMPLATE", "create_table", "parse_botocore_data_once", "table_definition", "template"]


class _ParsedOnceJSONFileLoader(JSONFileLoader):
    """botocore's file loader, keeping what it parsed for every loader in the process."""

    _parsed: dict[str, Any] = {}

    def load_file(self, file_path: str) -> Any:
        if file_path not in self._parsed:
            data = super().load_file(file_path)
            if data is None:  # no such file: nothing to keep
                return None
            self._parsed[file_path] = data
        return self._parsed[file_path]


def parse_botocore_data_once() -> None:
    """Every botocore session's loader reads its data files (endpoints.json, each service's model)
    through one process-wide cache.

    moto sets boto3's default session aside at every `mock_aws` start, so each test's first
    client builds a new botocore session, whose new loader parsed endpoints.json and every
    service model it used again: 28% of the fast subset's CPU (py-spy, one process). The files
    do not change during a run, and botocore treats what it loads as read-only (the one merge
    into a loaded model, its sdk-extras, gives the same model however often it runs), so sharing
    them changes nothing a test sees. Each session keeps its own loader and search paths."""
    Loader.FILE_LOADER_CLASS = _ParsedOnceJSONFileLoader
