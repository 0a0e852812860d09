"""Keys, per-key sequences and record encoding of the produce load (pure logic, no Kafka)."""

from __future__ import annotations

import random
import struct
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from testbed.errors import ConfigError
from testbed.load.records import (
    KeyChooser,
    KeySequencer,
    decode_ts,
    decode_value,
    encode_ts,
    encode_value,
    key_name,
    keys_for_process,
    min_payload_bytes,
    owned_key_indices,
)


def test_ts_header_is_8_byte_big_endian_unsigned() -> None:
    raw = encode_ts(1_700_000_000_123)
    assert len(raw) == 8
    assert raw == struct.pack(">Q", 1_700_000_000_123)
    assert raw[0] == 0 and raw[-1] == 1_700_000_000_123 & 0xFF  # big-endian: low byte last
    assert decode_ts(raw) == 1_700_000_000_123


def test_ts_header_of_wrong_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="8 bytes"):
        decode_ts(b"\x00\x01")


@given(seq=st.integers(0, 10**11), ts=st.integers(0, 10**13 - 1), size=st.integers(120, 4000))
def test_value_has_exact_size_and_round_trips(seq: int, ts: int, size: int) -> None:
    raw = encode_value("producer-0042", seq, ts, size)
    assert len(raw) == size
    assert decode_value(raw) == ("producer-0042", seq, ts)


def test_min_payload_holds_the_widest_record() -> None:
    need = min_payload_bytes(100_000, "producer")
    widest = encode_value(key_name("producer", 99_999, 100_000), 10**12 - 1, 10**13 - 1, need)
    assert len(widest) == need


def test_key_names_are_zero_padded_to_the_key_space() -> None:
    assert key_name("load", 7, 1000) == "load-007"
    assert key_name("load", 0, 1) == "load-0"


def test_key_space_is_partitioned_among_processes() -> None:
    shares = [set(owned_key_indices(10, i, 3)) for i in range(3)]
    assert set().union(*shares) == set(range(10))
    assert sum(len(s) for s in shares) == 10  # disjoint: no key has two producers
    assert shares[1] == {1, 4, 7}


def test_bad_process_share_is_rejected_with_the_field_named() -> None:
    with pytest.raises(ConfigError, match="process_index"):
        owned_key_indices(10, 3, 3)
    with pytest.raises(ConfigError, match="key_space"):
        owned_key_indices(2, 0, 3)


def test_uniform_keys_cover_the_space_evenly() -> None:
    keys = keys_for_process("k", 20, 0, 1)
    chooser = KeyChooser(keys, "uniform", rng=random.Random(1))
    counts = Counter(chooser.next_key() for _ in range(20_000))
    assert set(counts) == set(keys)
    assert max(counts.values()) < 1.25 * min(counts.values())


def test_zipf_keys_follow_the_power_law() -> None:
    keys = keys_for_process("k", 100, 0, 1)
    chooser = KeyChooser(keys, "zipf", zipf_exponent=1.0, rng=random.Random(2))
    n = 50_000
    counts = Counter(chooser.next_key() for _ in range(n))
    harmonic = sum(1 / i for i in range(1, 101))
    # rank 1 expected n / H(100) ~ 9,640; rank 2 half of it; rank 10 a tenth
    assert counts[keys[0]] == pytest.approx(n / harmonic, rel=0.05)
    assert counts[keys[0]] / counts[keys[1]] == pytest.approx(2.0, rel=0.1)
    assert counts[keys[0]] / counts[keys[9]] == pytest.approx(10.0, rel=0.2)


def test_unknown_distribution_is_rejected_naming_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="uniform.*zipf"):
        KeyChooser(["a"], "pareto")  # type: ignore[arg-type]


def test_per_key_sequences_are_monotonic_and_unique() -> None:
    chooser = KeyChooser(keys_for_process("k", 7, 0, 1), "zipf", rng=random.Random(3))
    sequencer = KeySequencer()
    seen: dict[str, list[int]] = {}
    for _ in range(5000):
        key = chooser.next_key()
        seen.setdefault(key, []).append(sequencer.next_seq(key))
    for key, seqs in seen.items():
        assert seqs == list(range(len(seqs))), key  # from 0, +1 each, no repeats
        assert sequencer.issued(key) == len(seqs)


def test_sequences_stay_unique_across_processes_of_one_load() -> None:
    # Each process owns disjoint keys, so (key, seq) pairs can never collide between processes.
    pairs: Counter[tuple[str, int]] = Counter()
    for process in range(3):
        chooser = KeyChooser(keys_for_process("load", 30, process, 3), "uniform", rng=random.Random(process))
        sequencer = KeySequencer()
        for _ in range(2000):
            key = chooser.next_key()
            pairs[(key, sequencer.next_seq(key))] += 1
    assert max(pairs.values()) == 1
