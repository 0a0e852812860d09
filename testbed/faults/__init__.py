"""Faults between members and brokers: network cuts (iptables on loopback) and client latency (Toxiproxy)."""
