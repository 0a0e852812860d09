"""A saved run as every stage reads it, read once: the harness's actions and the run's windows, each member's
control events, ``started`` fields, last event and life, and which group kind each member belongs to."""
