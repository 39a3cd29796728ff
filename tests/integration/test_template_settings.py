"""The template parameters of the trigger's preflight and Slack link settings
(RequireFreshUpstream, SparkTimeoutSeconds, PlanLinkBase): their defaults are the code's, every
value they allow is one the settings accept (and the bounds are the settings' bounds), and
only the function that reads them gets them. Shape only; `sam validate --lint` runs in
test_sam.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from backfill_local.template_tables import template
from backfill_orchestrator.notify.messages import plan_page_url
from backfill_orchestrator.settings.environment import EnvironmentReader
from backfill_orchestrator.settings.preflight import PreflightLimits

WIRED = {
    "REQUIRE_FRESH_UPSTREAM": "RequireFreshUpstream",
    "SPARK_TIMEOUT_SECONDS": "SparkTimeoutSeconds",
    "PLAN_LINK_BASE": "PlanLinkBase",
}
PLAN = "s3://backfill-configs/backfills/orders-0604-1a2b3c4d/plan.json"


def parameter(name: str) -> dict[str, Any]:
    return template()["Parameters"][name]


def limits(**variables: str) -> tuple[PreflightLimits, list[str]]:
    env = EnvironmentReader(variables)
    return PreflightLimits.read(env), env.problems


def test_only_the_trigger_function_gets_them_each_from_its_parameter() -> None:
    functions = {
        name: resource
        for name, resource in template()["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    trigger = functions.pop("TriggerFunction")["Properties"]["Environment"]["Variables"]
    assert {variable: trigger.get(variable) for variable in WIRED} == {
        v: {"Ref": p} for v, p in WIRED.items()
    }
    for name, function in functions.items():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        assert not set(WIRED) & set(variables), name
    assert not set(WIRED) & set(template()["Globals"]["Function"]["Environment"]["Variables"])


def test_the_defaults_are_the_codes_defaults() -> None:
    defaults = {variable: str(parameter(name)["Default"]) for variable, name in WIRED.items()}
    assert limits(**defaults) == limits()
    assert plan_page_url(PLAN, environ={"PLAN_LINK_BASE": defaults["PLAN_LINK_BASE"]}) == plan_page_url(
        PLAN, environ={}
    )


def test_require_fresh_upstream_allows_exactly_the_flag_values() -> None:
    allowed = parameter("RequireFreshUpstream")["AllowedValues"]
    assert {value: limits(REQUIRE_FRESH_UPSTREAM=value) for value in allowed} == {
        "true": (PreflightLimits(require_fresh_upstream=True), []),
        "false": (PreflightLimits(), []),
    }


def test_spark_timeout_bounds_are_the_settings_bounds() -> None:
    spark_timeout = parameter("SparkTimeoutSeconds")
    low, high = spark_timeout["MinValue"], spark_timeout["MaxValue"]
    for accepted in (low, high):
        assert limits(SPARK_TIMEOUT_SECONDS=str(accepted)) == (
            PreflightLimits(spark_timeout_seconds=accepted),
            [],
        )
    for refused in (low - 1, high + 1):
        assert limits(SPARK_TIMEOUT_SECONDS=str(refused))[1], refused


@pytest.mark.parametrize(
    ("base", "linked"),
    [
        ("", False),  # the default: the S3 console's page
        ("https://backfills.internal.example.com", True),
        ("https://d111111abcdef8.cloudfront.net/configs/", True),
        ("http://backfills.internal.example.com", False),
        ("https://", False),
        ("backfills.internal.example.com", False),
    ],
)
def test_plan_link_base_allows_exactly_the_values_the_code_links_with(base: str, linked: bool) -> None:
    allowed = re.fullmatch(parameter("PlanLinkBase")["AllowedPattern"], base) is not None
    uses_base = plan_page_url(PLAN, environ={"PLAN_LINK_BASE": base}) != plan_page_url(PLAN, environ={})
    assert (allowed, uses_base) == (linked or base == "", linked)


def test_plan_link_base_refuses_whitespace_which_would_break_the_link() -> None:
    assert (
        re.fullmatch(parameter("PlanLinkBase")["AllowedPattern"], "https://backfills.example.com/a b") is None
    )
