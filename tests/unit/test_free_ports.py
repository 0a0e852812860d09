"""free_ports: ports for children to bind later, outside the range the kernel hands to outgoing connections."""

from __future__ import annotations

import socket

from testbed import children
from testbed.children import ephemeral_ports, free_ports


def test_ports_are_distinct_free_and_outside_the_ephemeral_range() -> None:
    ports = free_ports(8)
    assert len(set(ports)) == 8
    assert not any(p in ephemeral_ports() for p in ports)
    assert all(p in children.CHILD_PORTS for p in ports)
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free: a child can bind it


def test_a_port_in_use_is_not_handed_out(monkeypatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(children, "CHILD_PORTS", range(port, port + 1))
        monkeypatch.setattr(children, "ephemeral_ports", lambda: range(0))
        (given,) = free_ports(1)
        assert given != port  # the kernel's choice instead, once no candidate is left
