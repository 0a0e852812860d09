"""The Locust user that produces keyed records with confluent-kafka, inside a Locust process.

Imported only by the locustfile (Locust monkey-patches the process with gevent first). Each
process has one :class:`ProducerSession`: one librdkafka producer shared by its users (it
batches their records together), one key chooser and sequencer, one ack log. Nothing blocks
the gevent loop: ``produce()`` only enqueues, deliveries are served by ``poll(0)`` from the
users and from a poller greenlet, and the final drain at test stop polls without blocking.

Each delivery fires Locust's ``request`` event (``request_type="produce"``, ``name=<topic>``,
response time = produce to ack in ms; errors as failures) and each acknowledged record appends
an ``ack`` event to the process's ack log.
"""

from __future__ import annotations

import logging
import os
import random
import time
from functools import partial
from pathlib import Path
from typing import Any

import gevent
import locust.runners
from confluent_kafka import KafkaError, KafkaException, Message
from locust import User, events, task
from locust.env import Environment

from ..history.events import CLOCK_CORRECTION_ENV, now_ms
from . import early_producer
from .acklog import AckLog
from .early_producer import params_from_env
from .pacing import Pacer
from .records import TS_HEADER, KeyChooser, KeySequencer, encode_ts, encode_value, keys_for_process
from .spec import ProducerProcessParams

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.005
FINISH_CHECK_EVERY = 10  # poll intervals between looks for the finish request (50 ms)
DRAIN_TIMEOUT_S = 10.0
REQUEST_TYPE = "produce"
WORKER_REPORT_INTERVAL_S = 1.0


class ProducerSession:
    """The process's producer, keys, sequences and ack log; created by the first user."""

    def __init__(self, params: ProducerProcessParams, environment: Environment) -> None:
        spec = params.spec
        self.params = params
        self.topic = spec.topic
        self.payload_bytes = spec.payload_bytes
        self._fire = environment.events.request.fire
        seed = None if spec.seed is None else spec.seed * 1000 + params.process_index
        self.chooser = KeyChooser(
            keys_for_process(spec.name, spec.key_space, params.process_index, spec.processes),
            spec.key_distribution, spec.zipf_exponent, random.Random(seed),
        )
        self.sequencer = KeySequencer()
        self.clock_correction_ms = int(os.environ.get(CLOCK_CORRECTION_ENV) or 0)  # on another machine's clock
        self.ack_log = AckLog(Path(params.ack_log), params.producer_id)
        # Created at the start, empty while nothing fails: its presence says failures were recorded (none, or some).
        self.failure_log = AckLog(Path(params.failure_log), params.producer_id)
        self.producer = early_producer.take(params)
        self.delivered = 0
        self.failed = 0
        # One schedule window for all users of the process: users spawned late catch up, so the
        # process sends exactly its share of rate * duration within duration of its first user.
        self.schedule_start = time.monotonic()
        self.schedule_end = self.schedule_start + spec.duration_s
        self.producing = True
        self._runner = environment.runner
        self._poller = gevent.spawn(self._poll_loop)
        # The process's log says when its load began: the master's "All users spawned" waits for the workers'
        # reports and is replaced by a "not all reports received" line when they are late (a loaded machine).
        log.info("producer %s: first user started, producing to %s", params.producer_id, self.topic)

    # ---- producing -------------------------------------------------------------------------

    def produce_one(self) -> None:
        key = self.chooser.next_key()
        seq = self.sequencer.next_seq(key)
        while True:
            ts_ms = now_ms() + self.clock_correction_ms
            value = encode_value(key, seq, ts_ms, self.payload_bytes)
            on_delivery = partial(self._delivered, key, seq, ts_ms, time.perf_counter(), len(value))
            try:
                self.producer.produce(self.topic, value, key.encode(), headers=[(TS_HEADER, encode_ts(ts_ms))],
                                      on_delivery=on_delivery)
                return
            except BufferError:
                # librdkafka's queue is full: back-pressure. Serve deliveries and let others run;
                # the lost time shows as a rate shortfall, not as a dropped record.
                self.producer.poll(0)
                gevent.sleep(0.001)
            except KafkaException as exc:
                self.failed += 1
                self._record_failure(key, seq, ts_ms, exc.args[0] if exc.args else None)
                self._fire(request_type=REQUEST_TYPE, name=self.topic, response_time=0.0, response_length=0,
                           response=None, context={"key": key, "seq": seq}, exception=exc)
                return

    def _delivered(self, key: str, seq: int, ts_ms: int, t0: float, size: int,
                   err: KafkaError | None, msg: Message) -> None:
        response_ms = (time.perf_counter() - t0) * 1000.0
        if err is not None:
            self.failed += 1
            self._record_failure(key, seq, ts_ms, err)
            self._fire(request_type=REQUEST_TYPE, name=self.topic, response_time=response_ms, response_length=size,
                       response=None, context={"key": key, "seq": seq}, exception=KafkaException(err))
            return
        self.delivered += 1
        self.ack_log.append(msg.topic(), msg.partition(), msg.offset(), key, seq, ts_ms)
        self._fire(request_type=REQUEST_TYPE, name=self.topic, response_time=response_ms, response_length=size,
                   response=None, context={}, exception=None)

    def _record_failure(self, key: str, seq: int, ts_ms: int, err: object) -> None:
        name = err.name() if isinstance(err, KafkaError) else type(err).__name__
        self.failure_log.append_failure(self.topic, key, seq, ts_ms, name)

    def _poll_loop(self) -> None:
        # Serves deliveries while users wait, flushes the ack log when acks pause, and watches for
        # LoadGenerator.stop()'s finish request.
        finish_request = Path(self.params.finish_request)
        ticks = 0
        while True:
            self.producer.poll(0)
            for written in (self.ack_log, self.failure_log):
                written.flush_if_due()
            ticks += 1
            if self.producing and ticks % FINISH_CHECK_EVERY == 0 and finish_request.exists():
                gevent.spawn(self.finish)
            gevent.sleep(POLL_INTERVAL_S)

    def finish(self) -> None:
        """Stop producing, drain, push the final counts to the master, then say so with a marker.

        Done before Locust is asked to quit: a master quits only 0.5 s after telling its workers
        to, too soon for a worker still draining, whose last deliveries its stats would miss.
        """
        if not self.producing:
            return
        self.producing = False
        self.drain(timeout_s=drain_budget_s(self.params))
        if isinstance(self._runner, locust.runners.WorkerRunner):
            self._runner._send_stats()  # Locust's own final-report call; otherwise up to 1 s later
        Path(self.params.finished_marker).touch()

    # ---- stopping --------------------------------------------------------------------------

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait (without blocking gevent) for every queued record's delivery; purge what is left.

        Purged records come back through the delivery callback as failures, so every produced
        record ends as exactly one Locust request: a success with an ack, or a failure.
        """
        deadline = time.monotonic() + timeout_s
        while len(self.producer) > 0 and time.monotonic() < deadline:
            self.producer.poll(0)
            gevent.sleep(0.002)
        if len(self.producer) > 0:
            log.warning("producer %s: %d records undelivered after %.0fs, purging them",
                        self.params.producer_id, len(self.producer), timeout_s)
            self.producer.purge()
            self.producer.flush(0.5)  # serves the purged records' delivery reports (as failures)
        for written in (self.ack_log, self.failure_log):
            written.flush()

    def close(self) -> None:
        self._poller.kill(block=False)
        for written in (self.ack_log, self.failure_log):
            written.close()


def drain_budget_s(params: ProducerProcessParams) -> float:
    # Within half the generator's stop timeout, so a slow broker cannot get the process killed.
    return min(DRAIN_TIMEOUT_S, params.spec.stop_timeout_s / 2)


_session: ProducerSession | None = None


def session(environment: Environment) -> ProducerSession:
    global _session
    if _session is None:
        _session = ProducerSession(params_from_env(), environment)
    return _session


@events.init.add_listener
def _refresh_loop_clock(environment: Environment, **_: Any) -> None:
    # libev caches "now" and the loop has not run since gevent was imported, seconds ago on a busy
    # machine; Locust's --run-time timer would otherwise fire that much early.
    gevent.get_hub().loop.update_now()
    # Workers report to the master every 3 s by default; at 1 s the master's periodic CSV stats
    # catch the last deliveries within the run-time grace (see LoadSpec.locust_run_time_arg).
    locust.runners.WORKER_REPORT_INTERVAL = WORKER_REPORT_INTERVAL_S


@events.test_stop.add_listener
def _drain_on_stop(environment: Environment, **_: Any) -> None:
    # Fires on the single process and on each worker (the master has no session): every record
    # produced is acknowledged or failed before the final stats go out.
    if _session is not None:
        _session.drain(timeout_s=drain_budget_s(_session.params))


@events.quit.add_listener
def _close_on_quit(**_: Any) -> None:
    # `quit` fires after the runner stopped (and test_stop drained); `quitting` would be too early,
    # as users still run then.
    if _session is not None:
        _session.drain(timeout_s=1.0)
        _session.close()


class KafkaProducerUser(User):
    """Produces ``rate / users`` records/s on the schedule of a :class:`Pacer`."""

    def on_start(self) -> None:
        self.session = session(self.environment)
        self.pacer = Pacer(rate=self.session.params.spec.rate_per_user, start=self.session.schedule_start,
                           end=self.session.schedule_end)

    def wait_time(self) -> float:
        return self.pacer.wait_s(time.monotonic())

    @task
    def produce_due(self) -> None:
        if not self.session.producing:
            return
        for _ in range(self.pacer.due(time.monotonic())):
            self.session.produce_one()
        self.session.producer.poll(0)
