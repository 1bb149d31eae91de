"""Scale-out on Dagster's Celery executor: PostgreSQL + Redis + daemon + one Celery worker per box
(`bench cluster up/status/down`, docs/scale-out.md)."""
