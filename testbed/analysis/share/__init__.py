"""Share groups (KIP-932): which members are share members, and their deliveries, redeliveries and losses."""
