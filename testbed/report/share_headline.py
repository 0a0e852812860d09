"""A share group's headline cards (KIP-932; ``kind_reports`` puts them in the run's answer): redeliveries and
why, how long a killed or frozen member's records waited, the anomalies (concurrent acquisitions, late
acknowledgements the broker took while it still tracked the record) and what became of every record. Every figure from metrics.json;
unknown is said, never 0."""

from __future__ import annotations

from .headline import Headline, Known, Unknown, _tone, duration, measured, phrase
from .inputs import RunOutputs
from .page import format_number
from .share_charts import share_config

REASON_WORDS = (("share_redeliveries_released", "released by their holder"),
                ("share_redeliveries_lock_expired", "after a lock ran out"),
                ("share_redeliveries_member_frozen", "after their holder froze"),
                ("share_redeliveries_member_left", "after their holder left"),
                ("share_redeliveries_member_killed", "after their holder was killed"),
                ("share_redeliveries_unjudged", "of a cause not judged (lock duration unknown)"))


def share_headlines(out: RunOutputs) -> list[Headline]:
    return [redeliveries(out), fault_latency(out), concurrent(out), late_acks(out), share_lost(out)]


def redeliveries(out: RunOutputs) -> Headline:
    n, total = measured(out, "share_redeliveries"), measured(out, "share_acquisitions")
    card = dict(key="headline-share-redeliveries", label="share redeliveries", link="#share-timeline",
                tone=_tone(out, ["share_redeliveries"], n))
    if isinstance(n, Unknown):
        return Headline(figure="unknown", sentence=f"Redeliveries are unknown: {n.reason}.", **card)
    parts = [f"{phrase(measured(out, name))} {words}" for name, words in REASON_WORDS
             if not (isinstance(measured(out, name), Known) and measured(out, name).value == 0)]
    why = f": {', '.join(parts)}" if parts and n.value else ""
    return Headline(figure=format_number(n.value), sentence=f"{format_number(n.value)} of the {phrase(total)} "
                    f"deliveries were redeliveries{why}.", **card)


def fault_latency(out: RunOutputs) -> Headline:
    p50, top = measured(out, "share_redelivery_latency_p50_ms"), measured(out, "share_redelivery_latency_max_ms")
    lock = share_config(out).get("record_lock_duration_ms")
    card = dict(key="headline-share-fault-latency", label="redelivery after a kill or freeze",
                link="#share-timeline", tone=_tone(out, ["share_redelivery_latency_p50_ms",
                                                         "share_redelivery_latency_max_ms"], Known(1)))
    lock_text = f" (the lock lasts {duration(lock)})" if lock is not None else ""
    if isinstance(p50, Unknown):
        return Headline(figure="unknown", sentence=f"Redelivery after a killed or frozen member is unknown: "
                        f"{p50.reason}.", **card)
    return Headline(figure=duration(p50.value), sentence="The records of a killed or frozen member were acquired "
                    f"again {duration(p50.value)} (median; longest {phrase(top, True)}) after their holder had "
                    f"acquired them{lock_text}.", **card)


def concurrent(out: RunOutputs) -> Headline:
    m, after = measured(out, "share_concurrent_acquisitions"), measured(out, "share_redelivered_after_completion")
    card = dict(key="headline-share-concurrent", label="concurrent acquisitions",
                link="#metric-share_concurrent_acquisitions",
                tone=_tone(out, ["share_concurrent_acquisitions", "share_redelivered_after_completion"], m))
    if isinstance(m, Unknown):
        return Headline(figure="unknown", sentence=f"Concurrent acquisitions are unknown: {m.reason}; "
                        f"{phrase(after)} record(s) were acquired again after an accept or reject.", **card)
    head = ("No record was acquired while another member held it under a valid lock" if m.value == 0 else
            f"{format_number(m.value)} record(s) were acquired while another member held them under a valid lock")
    return Headline(figure=format_number(m.value), sentence=f"{head}; {phrase(after)} were acquired again after "
                    "the broker took their accept or reject.", **card)


def late_acks(out: RunOutputs) -> Headline:
    ok, refused = measured(out, "share_late_acks_accepted"), measured(out, "share_late_acks_rejected")
    noop = measured(out, "share_late_acks_noop")
    card = dict(key="headline-share-late-acks", label="late acks accepted", link="#metric-share_late_acks_accepted",
                tone=_tone(out, ["share_late_acks_accepted"], ok))
    if isinstance(ok, Unknown):
        return Headline(figure="unknown", sentence=f"Late acknowledgements are unknown: {ok.reason}.", **card)
    return Headline(figure=format_number(ok.value), sentence="Of the acknowledgements sent after their lock "
                    f"expired, the broker refused {phrase(refused)}, took {phrase(noop)} as no-ops (another "
                    f"delivery had completed the record) and took {format_number(ok.value)} while it still tracked "
                    f"the record{' (it must refuse those)' if ok.value else ''}.", **card)


def share_lost(out: RunOutputs) -> Headline:
    m, acked = measured(out, "share_records_lost"), measured(out, "share_records_acked")
    accepted, archived = measured(out, "share_records_accepted"), measured(out, "share_records_archived")
    card = dict(key="headline-share-lost", label="share records lost", link="#metric-share_records_lost",
                tone=_tone(out, ["share_records_lost"], m))
    fate = f"{phrase(accepted)} accepted and {phrase(archived)} archived"
    if isinstance(m, Unknown):
        return Headline(figure="unknown", sentence=f"Lost records are unknown: {m.reason} ({fate}).", **card)
    of = "" if isinstance(acked, Unknown) else f" of the {format_number(acked.value)} acknowledged to the producers"
    if m.value == 0:
        return Headline(figure="0", sentence=f"No record was lost: every one{of} ended accepted or archived by the "
                        f"end of the final drain ({fate}).", **card)
    return Headline(figure=format_number(m.value), sentence=f"{format_number(m.value)} record(s){of} were neither "
                    f"accepted nor archived by the end of the final drain: lost ({fate}).", **card)

