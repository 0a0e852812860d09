#!/usr/bin/env bash
# Run once by the image's build (no network but loopback): starts a throw-away single-node cluster through the entry
# script with KAFKA_CLASS_ARCHIVE=dump and stops it once it has started, so that the storage tool's JVM and the
# broker's each write the classes they loaded to an archive in /opt/kafka/class-archives, which every later start
# maps. Never fails the build: an image without the archives starts as before, only slower, and the build's log says
# why they are missing.
set -uo pipefail
archives=/opt/kafka/class-archives
data=/var/lib/kafka/data
log=$(mktemp)
mkdir -p "$archives"
KAFKA_CLASS_ARCHIVE=dump KAFKA_NODE_ID=1 KAFKA_CLUSTER_ID=Y2xhc3NBcmNoaXZlQnVpbA KAFKA_HOST=127.0.0.1 \
  KAFKA_PORT=39092 KAFKA_CONTROLLER_PORT=39093 KAFKA_QUORUM_VOTERS=1@127.0.0.1:39093 \
  /opt/kafka/entrypoint.sh offsets.topic.replication.factor=1 >"$log" 2>&1 &
pid=$!
for _ in $(seq 600); do  # at most 2 minutes
  grep -q "Kafka Server started" "$log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
# The image's data directory must stay empty: Docker copies it into every new data volume.
find "$data" -mindepth 1 -delete
rm -f /opt/kafka/config/server.properties
if [[ -f "$archives/storage-tool.jsa" && -f "$archives/broker.jsa" ]]; then
  ls -l "$archives"
else
  echo "class-archive: no class-data archives (brokers start without them, slower); the broker's log:" >&2
  tail -n 30 "$log" >&2
  rm -rf "$archives"
fi
rm -f "$log"
exit 0
