"""Checkers: pure functions of an analysed run returning valid / invalid / unknown verdicts."""

from .allowed import AllowedAnomalies, allowed_anomalies
from .checks import CHECKERS, Evidence, load_evidence, run_checkers
from .verdict import Verdict, combine

__all__ = ["CHECKERS", "AllowedAnomalies", "Evidence", "Verdict", "allowed_anomalies", "combine", "load_evidence", "run_checkers"]
