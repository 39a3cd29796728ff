"""The Backfills page in the Airflow UI: an Airflow 3 plugin (`plugin.BackfillsPlugin`, loaded
through the package's `airflow.plugins` entry point) that serves a list of every backfill, a
page per backfill (timeline, plan graph, partition grid, figures, links) and the control
actions, under Airflow's own login and permissions (docs/airflow.md, "The Backfills page").

Only Airflow's api-server imports this package (the plugin builds its app on the first
request): the Lambdas, the client and the DAG's tasks never do."""
