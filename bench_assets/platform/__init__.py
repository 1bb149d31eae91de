"""The platform every benchmark family builds on: running jobs on the product instance (one run, or many through
the run pool), durable file writes, safe archive extraction, provenance, the warehouse engine and its findings,
the report document model, the Hugging Face client, the family contribution types and the code-location loader.

It imports no family, no report and no CLI (docs/architecture.md; checked by `lint-imports`)."""
