"""AWS for the tests: resources for moto, built from template.yaml so tests and infrastructure
cannot drift (one reader of the template, `backfill_local.template_tables`, which the demo uses
too), and botocore's data files parsed once per test process.

    create_table(dynamodb, "StatusTable", table_name="status")   # keys, attributes, indexes
"""

from __future__ import annotations

from typing import Any

import botocore.loaders
import botocore.session

from backfill_local.template_tables import TEMPLATE, create_table, table_definition, template

__all__ = ["TEMPLATE", "create_table", "parse_botocore_data_once", "table_definition", "template"]

_LOADED: dict[tuple[Any, ...], Any] = {}  # what every default loader of the process has loaded


def _loader_sharing_what_it_loads(search_path_string: str | None = None) -> botocore.loaders.Loader:
    loader = botocore.loaders.create_loader(search_path_string)
    if search_path_string is None:  # botocore's own data (AWS_DATA_PATH would add other files)
        # `instance_cache`, botocore's memo of every load, keeps its results in `_cache`
        loader._cache = _LOADED
    return loader


def parse_botocore_data_once() -> None:
    """Every botocore session's loader shares one memo of what was loaded (endpoints.json, each
    service's model, the list of services) instead of reading and parsing the files again.

    moto sets boto3's default session aside at every `mock_aws` start, so each test's first
    client built a new botocore session, whose new loader listed the data directory and parsed
    endpoints.json and every service model it used again: a third of the fast subset's CPU
    (py-spy, one process). The files do not change during a run, and a shared memo is what one
    session's loader already does for all of its clients, so no test sees a difference. Each
    session keeps its own loader and search paths."""
    botocore.session.create_loader = _loader_sharing_what_it_loads
