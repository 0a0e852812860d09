"""Checkers: pure functions of an analysed run returning valid / invalid / unknown verdicts."""

from .allowed import AllowedAnomalies, allowed_anomalies
from .checks import CHECKERS, Evidence, combine, load_evidence, run_checkers

__all__ = ["CHECKERS", "AllowedAnomalies", "Evidence", "allowed_anomalies", "combine", "load_evidence", "run_checkers"]
