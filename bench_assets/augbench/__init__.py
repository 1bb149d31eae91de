"""The augmentation speed benchmark family: media, library adapters, runners, results and the paper report.
`definitions.py` holds what the code location loads (`defs`) and what the report receives (`contribution`)."""
