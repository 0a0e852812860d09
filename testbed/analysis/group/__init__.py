"""The consumer group's control plane, from its members' callbacks and the harness's actions: member lives,
ownership intervals, rebalance episodes, revocations, pauses and their causes, the coordinator's view, closes."""
