"""The job's small pure parts: scopes and argument types (documents: tests/unit/test_documents.py)."""

from __future__ import annotations

import argparse
from datetime import date

import pytest

from spark_jobs.engine import cli_args
from spark_jobs.engine.scope import Scope

pytestmark = pytest.mark.slow  # lives with the Spark tests; needs no Spark


def test_scope_looks_back_and_restricts_to_a_tables_axes():
    scope = Scope(days=(date(2021, 5, 10), date(2021, 5, 20)), hours=(3,), feeds=("web",))
    back = scope.looking_back(2)
    assert back.days == (
        date(2021, 5, 8),
        date(2021, 5, 9),
        date(2021, 5, 10),
        date(2021, 5, 18),
        date(2021, 5, 19),
        date(2021, 5, 20),
    )
    daily = scope.restricted_to(("day", "feed"))
    assert daily.hours is None and daily.feeds == ("web",)
    assert Scope().predicate() is None
    assert daily.contains({"day": date(2021, 5, 10), "feed": "web"})
    assert not daily.contains({"day": date(2021, 5, 11), "feed": "web"})


def test_day_lists_accept_ranges_and_refuse_nonsense():
    assert cli_args.day_list("2021-06-04, 2021-06-10..2021-06-12") == (
        date(2021, 6, 4),
        date(2021, 6, 10),
        date(2021, 6, 11),
        date(2021, 6, 12),
    )
    for bad in ("2021-06-12..2021-06-10", "2021-02-30", ",", "yesterday"):
        with pytest.raises(argparse.ArgumentTypeError):
            cli_args.day_list(bad)
    assert cli_args.hour_list("23,0,0") == (0, 23)
    with pytest.raises(argparse.ArgumentTypeError, match="hours are 0 to 23"):
        cli_args.hour_list("24")
    with pytest.raises(argparse.ArgumentTypeError, match="feeds are"):
        cli_args.feed_list("Web")
