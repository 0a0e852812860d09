#!/usr/bin/env bash
# Run once by the image's build (no network but loopback): starts a throw-away single-node cluster through the entry
# script with KAFKA_CLASS_ARCHIVE=dump and stops it once it has started, so that its JVM (the storage tool's and the
# broker's, or the one of both: TestbedKafkaStart.java) writes the classes it loaded to an archive in
# /opt/kafka/class-archives, which every later start maps. Also where the one-JVM launcher is kept or dropped: kept
# when a node starts through it. Never fails the build: an image without the archives starts as before, only slower,
# and the build's log says why they are missing.
set -uo pipefail
archives=/opt/kafka/class-archives
data=/var/lib/kafka/data
log=$(mktemp)
mkdir -p "$archives"
launcher=/opt/kafka/launcher
started=false
has_launcher() { [[ -f "$launcher/testbed-kafka-start.jar" ]]; }
# One throw-away start through the entry script; true when the node said it started.
dump_start() {
  KAFKA_CLASS_ARCHIVE=dump KAFKA_NODE_ID=1 KAFKA_CLUSTER_ID=Y2xhc3NBcmNoaXZlQnVpbA KAFKA_HOST=127.0.0.1 \
    KAFKA_PORT=39092 KAFKA_CONTROLLER_PORT=39093 KAFKA_QUORUM_VOTERS=1@127.0.0.1:39093 \
    /opt/kafka/entrypoint.sh offsets.topic.replication.factor=1 >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do  # at most 2 minutes
    if grep -q "Kafka Server started" "$log"; then
      started=true
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  find "$data" -mindepth 1 -delete
  rm -f /opt/kafka/config/server.properties
}
dump_start
if [[ "$started" != true ]] && has_launcher; then
  # This Kafka's tools do not start through the one-JVM launcher: the image formats in a JVM of its own.
  echo "class-archive: no start through $launcher; the broker formats its storage in a JVM of its own:" >&2
  tail -n 30 "$log" >&2
  rm -rf "${launcher:?}"/* "${archives:?}"/*
  dump_start
fi
# (dump_start leaves the image's data directory empty: Docker copies it into every new data volume.)
if [[ -f "$archives/broker.jsa" ]] && { has_launcher || [[ -f "$archives/storage-tool.jsa" ]]; }; then
  ls -l "$archives"
else
  echo "class-archive: no class-data archives (brokers start without them, slower); the broker's log:" >&2
  tail -n 30 "$log" >&2
  rm -rf "$archives"
fi
rm -f "$log"
exit 0
