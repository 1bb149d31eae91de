"""The campaign checks' thresholds, stated once: the checks (warehouse_checks.py, pilot_gate.py), their run-config
defaults and the report page (its valid-vs-test band) all read them from here."""

# |valid - test| mAP50-95 a healthy run stays within; the BatchNorm-eps bug was 0.40 (valid 0.566, test 0.162).
SELECTION_TOLERANCE = 0.10
# Largest gap in mean mAP50-95 between neighbouring sizes of one family: healthy ~0.03, the bug report was 0.16.
ADJACENT_MAX_GAP = 0.10
