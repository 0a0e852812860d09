"""Member runners: one process per consumer-group member, writing its typed history (docs/history.md).

Imports nothing on purpose: runners run inside per-version venvs that have only the client and pydantic.
"""
