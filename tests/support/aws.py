"""AWS resources for moto, built from template.yaml so tests and infrastructure cannot drift:
one reader of the template (`backfill_local.template_tables`, which the demo uses too).

    create_table(dynamodb, "StatusTable", table_name="status")   # keys, attributes, indexes
"""

from backfill_local.template_tables import TEMPLATE, create_table, table_definition, template

__all__ = ["TEMPLATE", "create_table", "table_definition", "template"]
