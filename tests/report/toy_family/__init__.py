"""A toy third benchmark family, laid out like a real one (docs/architecture.md, "Adding a family"): its assets and
job, its warehouse table, its check on the warehouse, and its `defs` + `contribution` in definitions.py. It
registers with the report through the same contribution as rf100vl and augbench, with no edit to the report or
the platform."""
