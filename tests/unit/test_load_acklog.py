"""The buffered ack log and the load summary computed from saved files (no Kafka)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.errors import ConfigError
from testbed.history.events import Ack
from testbed.history.writer import read_events
from testbed.load.acklog import AckLog
from testbed.load.spec import LoadSpec
from testbed.load.summary import summarize


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def test_acks_are_buffered_then_written_as_valid_ack_events(tmp_path: Path) -> None:
    path = tmp_path / "acks" / "producer-0.jsonl"
    log = AckLog(path, "producer-0", flush_interval_s=60)
    log.append("t", 2, 17, "producer-1", 3, 1_700_000_000_000)
    assert _lines(path) == 0 and log.pending == 1  # not yet due
    log.flush()
    (event,) = list(read_events(path))
    assert isinstance(event, Ack)
    assert (event.source, event.topic, event.partition, event.offset, event.key, event.seq, event.produce_ts_ms) == (
        "producer-0", "t", 2, 17, "producer-1", 3, 1_700_000_000_000)


def test_buffer_is_flushed_once_the_interval_has_passed(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    now = [0.0]
    log = AckLog(path, "p", flush_interval_s=0.1, clock=lambda: now[0])
    log.append("t", 0, 0, "k", 0, 1)
    now[0] = 0.09
    log.flush_if_due()
    assert _lines(path) == 0
    now[0] = 0.1
    log.flush_if_due()
    assert _lines(path) == 1
    log.close()


def test_close_writes_what_is_pending_and_appends_to_an_existing_log(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with AckLog(path, "p", flush_interval_s=60) as log:
        for i in range(3):
            log.append("t", 0, i, "k", i, 1)
    with AckLog(path, "p", flush_interval_s=60) as log:
        log.append("t", 0, 3, "k", 3, 1)
    assert [e.offset for e in read_events(path)] == [0, 1, 2, 3]


def _spec(**over: object) -> dict[str, object]:
    return {"bootstrap_servers": "127.0.0.1:9092", "topic": "t", "rate": 100, "duration_s": 5, **over}


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"bootstrap_servers": "10.0.0.1:9092"}, "bootstrap_servers"),
        ({"rate": 0}, "rate"),
        ({"key_distribution": "pareto"}, "key_distribution"),
        ({"workers": 4, "users": 2}, "users"),
        ({"key_space": 1, "workers": 2, "users": 2}, "key_space"),
        ({"payload_bytes": 10}, "payload_bytes"),
        ({"producer_config": {"bootstrap.servers": "x"}}, "bootstrap_servers"),
    ],
)
def test_bad_spec_is_refused_naming_the_field(over: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        LoadSpec.parse(**_spec(**over))


def test_spec_splits_the_rate_among_users_and_bounds_locust_run_time() -> None:
    spec = LoadSpec.parse(**_spec(rate=1000, users=8, duration_s=10.5, workers=2))
    assert spec.rate_per_user == 125
    assert spec.processes == 2
    assert spec.locust_run_time_arg == "14s"
    assert [spec.producer_id(i) for i in range(2)] == ["producer-0", "producer-1"]


def _write_acks(path: Path, produce_and_ack_ms: list[tuple[int, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for i, (produced, acked) in enumerate(produce_and_ack_ms):
            f.write(Ack(source=path.stem, ts_ms=acked, topic="t", partition=0, offset=i, key="k", seq=i,
                        produce_ts_ms=produced).model_dump_json() + "\n")


def test_summary_rate_is_acked_records_over_their_produce_span(tmp_path: Path) -> None:
    # 2 producers, 100 records each, every 10 ms from t=1000 to t=1990 (0.99 s): 199 intervals
    # in 0.99 s -> 201/s; the last ack comes 0.26 s after the last produce.
    a, b = tmp_path / "producer-0.jsonl", tmp_path / "producer-1.jsonl"
    _write_acks(a, [(1000 + 10 * i, 1005 + 10 * i) for i in range(100)])
    _write_acks(b, [(1000 + 10 * i, 1005 + 10 * i) for i in range(99)] + [(1990, 2250)])
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps([
        {"method": "produce", "name": "t", "num_requests": 203, "num_failures": 3},
        {"method": "produce", "name": "other", "num_requests": 9, "num_failures": 9},
    ]))
    s = summarize(200.0, {"producer-0": a, "producer-1": b}, stats, "t")
    assert s.acked == 200
    assert s.active_s == pytest.approx(0.99)
    assert s.achieved_rate == pytest.approx(199 / 0.99)
    assert s.shortfall_pct == pytest.approx((200 - 199 / 0.99) / 2)
    assert s.ack_tail_s == pytest.approx(0.26)
    assert (s.failures, s.locust_delivered) == (3, 200)
    assert s.unknown == {}


def test_summary_without_acks_or_stats_says_unknown_never_zero(tmp_path: Path) -> None:
    s = summarize(100.0, {"producer-0": tmp_path / "none.jsonl"}, tmp_path / "missing.json", "t")
    assert s.acked == 0
    assert s.achieved_rate is None and s.shortfall_pct is None and s.failures is None
    assert set(s.unknown) >= {"achieved_rate", "shortfall_pct", "failures", "locust_delivered"}


def test_a_second_load_with_the_same_name_is_refused_before_anything_starts(tmp_path: Path) -> None:
    from testbed.run.layout import RunDir
    from testbed.load import LoadGenerator

    run_dir = RunDir(tmp_path / "run").create()
    run_dir.ack_log("producer-0").write_text("")
    load = LoadGenerator(run_dir, **_spec())
    with pytest.raises(ConfigError, match="name must be unique"):
        load.start()
    assert load.processes == []
