"""The Dagster shells of the family: partitions and their registration, the assets (dataset, checkpoint,
predictions, scores, submission, campaign status), their checks, jobs, schedules, sensors and the partition guard.
Thin: every decision they make is a function of the stages below (`datasets` ... `report`)."""
