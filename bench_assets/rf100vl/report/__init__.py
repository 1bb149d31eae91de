"""Report: what the family hands the report composition: its warehouse tables and their builders, the campaign
checks as queries over the warehouse, the report page rendered from the dbt marts and the small plots shared with
asset metadata. (The paired model comparison is the dbt Python model `model_comparison`.)"""
