"""Child processes launched by the Dagster steps (through Pipes): the only code that imports torch
and LibreYOLO. They read a JSON spec (`specs.py`) and write their results as files."""
