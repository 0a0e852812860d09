"""Whether the runs behind a comparison's figure ran on a saturated host, in a few words for beside it.

A run ran on a saturated host when its host was saturated across at least one of its pauses
(``pauses_on_saturated_host``), or for at least ``RUN_SHARE_PCT`` of the run (``host_saturated_pct``); its
host is unknown without samples (a run saved before the sampler existed), never "not saturated". Read from
metrics.json only (docs/metrics.md, "Host").
"""

from __future__ import annotations

from collections.abc import Sequence

from .inputs import RunOutputs

RUN_SHARE_PCT = 10.0


def saturated_run(run: RunOutputs) -> bool | None:
    """True / False, or None when the run has no host figures."""
    values = run.metric_values()
    share = (values.get("host_saturated_pct") or {}).get("value")
    pauses = (values.get("pauses_on_saturated_host") or {}).get("value")
    if share is None and pauses is None:
        return None
    return bool((share is not None and share >= RUN_SHARE_PCT) or (pauses is not None and pauses > 0))


def host_note(runs: Sequence[RunOutputs]) -> dict[str, str | bool]:
    """``{"text": .., "saturated": ..}`` for one column (a run, or a configuration's trials)."""
    verdicts = [saturated_run(run) for run in runs]
    known = [v for v in verdicts if v is not None]
    unknown = len(verdicts) - len(known)
    unknown_text = f"{unknown} without host samples (unknown)" if unknown else ""
    if not known:
        return {"text": "unknown: no host samples (saved before the sampler existed)", "saturated": False}
    hit = sum(known)
    if len(runs) == 1:
        share = (runs[0].metric_values().get("host_saturated_pct") or {}).get("value")
        text = (f"saturated ({share:g} % of the run)" if hit else f"not saturated ({share:g} % of the run)") \
            if share is not None else ("saturated" if hit else "not saturated")
        return {"text": text, "saturated": bool(hit)}
    parts = [f"{hit} of {len(runs)} trial(s) on a saturated host", unknown_text]
    return {"text": "; ".join(p for p in parts if p), "saturated": hit > 0}
