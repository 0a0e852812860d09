"""What a Kafka broker logs when it could not keep up, as the harness (a failed test's report) and the analysis (a
run's notes) both read it from the broker logs: a frozen or starved broker (its host's CPU, a pause from outside)
leaves these lines, and its clients meanwhile see timeouts, NOT_COORDINATOR and NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

# The controller's fence of a broker whose heartbeats it had not heard for broker.session.timeout.ms:
# "Fencing broker 1 at epoch 11 because its session has timed out."
FENCED_SILENT = "because its session has timed out"
# A controller event that ran for longer than controller.performance.always.log.threshold.ms (2 s):
# "Exceptionally slow controller event writeNoOpRecord(1210214200) took 23394 ms."
SLOW_CONTROLLER = "Exceptionally slow controller event"
# A heartbeat the controller could not even queue: "processExpiredBrokerHeartbeat: controller event queue overloaded."
QUEUE_OVERLOADED = "controller event queue overloaded"
STALL_PHRASES = (FENCED_SILENT, SLOW_CONTROLLER, QUEUE_OVERLOADED)
