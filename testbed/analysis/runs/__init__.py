"""Across runs: repeated trials' medians and intervals, and every run under a folder as one table."""
