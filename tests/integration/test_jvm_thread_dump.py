"""A real JVM's answer to the stacks signal, read back as a timed-out wait reads a stuck Streams instance's: the
stream thread's name, state and innermost frames (``testbed.members.java.thread_dump``), and the JVM runs on."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from testbed.fleet.stacks import jvm_client_threads
from testbed.fleet.streams import stream_threads
from testbed.members.java.thread_dump import last_dump, thread_lines
from testbed.waits import wait_until

pytestmark = pytest.mark.integration

STUCK = """\
public class Stuck {
    public static void main(String[] args) throws Exception {
        Thread stream = new Thread(() -> {
            synchronized (Stuck.class) {
                try { Stuck.class.wait(); } catch (InterruptedException e) { }
            }
        }, "app-3f2a-StreamThread-1");
        stream.setDaemon(true);
        stream.start();
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(60_000);
    }
}
"""


def test_a_stream_threads_state_and_frames_are_read_from_a_real_jvm_dump(tmp_path: Path) -> None:
    source = tmp_path / "Stuck.java"
    source.write_text(STUCK)
    log = tmp_path / "jvm.log"
    with log.open("wb") as out:
        jvm = subprocess.Popen(["java", str(source)], stdout=out, stderr=subprocess.STDOUT)
    try:
        lines = lambda: log.read_text(errors="replace").splitlines()  # noqa: E731
        wait_until(lambda: "ready" in lines(), timeout_s=60, what="the JVM to start its thread",
                   abort=lambda: None if jvm.poll() is None else f"the JVM ended: {log.read_text()}")
        assert last_dump(lines()) is None
        jvm.send_signal(signal.SIGQUIT)
        dump = wait_until(lambda: last_dump(lines()), timeout_s=10, what="a complete thread dump")
        (stream,) = thread_lines(dump, re.compile(r"-StreamThread-\d+$"))
        assert stream.startswith("app-3f2a-StreamThread-1: WAITING (on object monitor) at java.lang.Object.wait"), \
            stream
        assert "Stuck.lambda$main$0(Stuck.java:5)" in stream and "java.base@" not in stream, stream
        assert thread_lines(dump, re.compile("no-such-thread")) == []
        # the readers a timed-out wait asks with: a Streams instance's stream threads; an absent member's client
        # threads, its main thread among them and none of the JVM's own (GC, compiler, reference handler)
        assert stream_threads(lines()) == [stream]
        client = jvm_client_threads(lines())
        assert sorted(line.split(":")[0] for line in client) == ["app-3f2a-StreamThread-1", "main"], client
        assert any(line.startswith("main: TIMED_WAITING (sleeping) at java.lang.Thread.sleep") for line in client), \
            client
        assert jvm.poll() is None  # a JVM lives through the stacks signal
    finally:
        jvm.kill()
        jvm.wait()
