"""Produce load driven by Locust, with an acknowledgement log (see docs/load.md).

``LoadGenerator`` is the service; the locustfile and ``producer_user`` run inside Locust's own
processes (gevent-patched) and are never imported by the harness.
"""

from .generator import LoadError, LoadGenerator
from .records import TS_HEADER, decode_ts, decode_value, encode_ts
from .spec import LoadSpec
from .summary import LoadSummary

__all__ = ["TS_HEADER", "LoadError", "LoadGenerator", "LoadSpec", "LoadSummary", "decode_ts", "decode_value",
           "encode_ts"]
