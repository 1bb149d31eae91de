"""Edge cases of bench_assets/rf100vl/warehouse_checks.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing")."""
