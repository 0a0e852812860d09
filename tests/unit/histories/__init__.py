"""Builders of small hand-made run directories with known answers, for analysis and checker tests."""
