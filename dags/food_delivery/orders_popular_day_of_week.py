"""Food delivery sample: the day's most popular orders by day of week (reads top_delivery_times,
customers; writes popular_orders_day_of_week). Rerun by backfills for its `airflow_dag` step."""

from backfill_runtime.sample_dag import sample_dag

dag = sample_dag(
    dag_id="orders_popular_day_of_week",
    inputs=["public.top_delivery_times", "public.customers"],
    description="Popular orders by day of week (food delivery sample)",
)
