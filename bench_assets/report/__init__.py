"""The report, composed from what the families contribute (`definitions.build_defs`): the warehouse loader, the
dbt marts and tests, and the rendered pages. It imports no family."""
