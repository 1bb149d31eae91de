"""Report: what the family hands the report composition: its warehouse tables and their builders, the campaign
checks as queries over the warehouse, the paired model comparison, the report page rendered from the dbt marts and
the small plots shared with asset metadata."""
