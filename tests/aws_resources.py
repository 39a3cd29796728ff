"""AWS resources for moto, built from template.yaml so tests and infrastructure cannot drift
(the demo builds its tables the same way: one reader of the template)."""

from backfill_local.template_tables import TEMPLATE, create_table, table_definition, template

__all__ = ["TEMPLATE", "create_table", "table_definition", "template"]
