"""Food delivery sample: email the day's discounts to customers (reads discounts, customers).
Rerun by backfills for its `airflow_dag` step."""

from backfill_runtime.sample_dag import sample_dag

dag = sample_dag(
    dag_id="email_discounts",
    inputs=["public.discounts", "public.customers"],
    description="Email discounts to customers (food delivery sample)",
)
