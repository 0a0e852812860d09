"""What one produced record carries: its key, its per-key sequence number and its produce time.

Pure logic, no Kafka and no gevent, so it is unit-tested on its own.

Per-key sequence numbers are unique across every user and every Locust process of one load
because the key space is *partitioned*: process ``i`` of ``n`` owns the keys whose index ``k``
has ``k % n == i`` and only it ever produces them, and the users of one process share one
:class:`KeySequencer` (gevent switches greenlets only at blocking calls, never between
``next_seq`` and ``produce``). Partitioning keeps the run's key space exactly the configured
size; keys carry the load's name as a prefix so two loads of one run never share a key.
"""

from __future__ import annotations

import bisect
import json
import random
import struct
from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConfigError

KeyDistribution = Literal["uniform", "zipf"]
KEY_DISTRIBUTIONS: tuple[str, ...] = ("uniform", "zipf")

TS_HEADER = "ts"
_TS_STRUCT = struct.Struct(">Q")
# The JSON prefix of a value before padding; its size is bounded by the widest key and numbers.
_VALUE_OVERHEAD = len('{"key":"","seq":,"ts":,"pad":""}')


def encode_ts(ts_ms: int) -> bytes:
    """The ``ts`` header: produce time in ms, 8 bytes, big-endian, unsigned."""
    return _TS_STRUCT.pack(ts_ms)


def decode_ts(raw: bytes) -> int:
    if len(raw) != _TS_STRUCT.size:
        raise ValueError(f"ts header must be {_TS_STRUCT.size} bytes, got {len(raw)}")
    return _TS_STRUCT.unpack(raw)[0]


def encode_value(key: str, seq: int, ts_ms: int, payload_bytes: int) -> bytes:
    """A JSON object ``{"key","seq","ts","pad"}`` padded with ``x`` to exactly ``payload_bytes``.

    When the unpadded object is already longer than ``payload_bytes`` it is returned unpadded;
    :class:`LoadSpec` validation keeps payloads large enough for that not to happen.
    """
    head = f'{{"key":{json.dumps(key)},"seq":{seq},"ts":{ts_ms},"pad":"'
    pad = payload_bytes - len(head) - 2
    return (head + "x" * max(0, pad) + '"}').encode()


def decode_value(raw: bytes) -> tuple[str, int, int]:
    """``(key, seq, produce_ts_ms)`` of a value made by :func:`encode_value`."""
    obj = json.loads(raw)
    return obj["key"], obj["seq"], obj["ts"]


def min_payload_bytes(key_space: int, name: str) -> int:
    """The smallest payload that holds the widest key, a 12-digit seq and a 13-digit ms time."""
    widest_key = len(key_name(name, key_space - 1, key_space))
    return _VALUE_OVERHEAD + widest_key + 12 + 13


def key_name(prefix: str, index: int, key_space: int) -> str:
    width = len(str(max(0, key_space - 1)))
    return f"{prefix}-{index:0{width}d}"


def owned_key_indices(key_space: int, process_index: int, process_count: int) -> list[int]:
    """The key indices process ``process_index`` of ``process_count`` produces, lowest first."""
    if process_count < 1 or not 0 <= process_index < process_count:
        raise ConfigError(f"process_index must be in [0, {process_count}), got {process_index!r}")
    if key_space < process_count:
        raise ConfigError(
            f"key_space must be at least the number of producing processes ({process_count}), got {key_space}"
        )
    return list(range(process_index, key_space, process_count))


@dataclass
class KeyChooser:
    """Draws keys from the keys one process owns, uniformly or Zipf-distributed by index.

    Under Zipf the i-th owned key (0-based) has weight ``1 / (i + 1) ** exponent``; since every
    process owns a stride of the same space, low key indices are the hot keys run-wide too.
    """

    keys: list[str]
    distribution: KeyDistribution = "uniform"
    zipf_exponent: float = 1.1
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if not self.keys:
            raise ConfigError("keys must not be empty")
        if self.distribution not in KEY_DISTRIBUTIONS:
            raise ConfigError(f"key_distribution must be one of {KEY_DISTRIBUTIONS}, got {self.distribution!r}")
        if self.distribution == "zipf":
            if self.zipf_exponent <= 0:
                raise ConfigError(f"zipf_exponent must be > 0, got {self.zipf_exponent!r}")
            total, cdf = 0.0, []
            for i in range(len(self.keys)):
                total += 1.0 / (i + 1) ** self.zipf_exponent
                cdf.append(total)
            self._cdf = [c / total for c in cdf]

    def next_key(self) -> str:
        if self.distribution == "uniform":
            return self.keys[self.rng.randrange(len(self.keys))]
        # min() guards the float rounding of the last cdf entry.
        return self.keys[min(bisect.bisect_right(self._cdf, self.rng.random()), len(self.keys) - 1)]


@dataclass
class KeySequencer:
    """Per-key sequence numbers from 0, in produce order; one instance per producing process."""

    _next: dict[str, int] = field(default_factory=dict)

    def next_seq(self, key: str) -> int:
        seq = self._next.get(key, 0)
        self._next[key] = seq + 1
        return seq

    def issued(self, key: str) -> int:
        return self._next.get(key, 0)


def keys_for_process(name: str, key_space: int, process_index: int, process_count: int) -> list[str]:
    return [key_name(name, k, key_space) for k in owned_key_indices(key_space, process_index, process_count)]
