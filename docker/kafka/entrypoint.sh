#!/usr/bin/env bash
# Starts one KRaft node (broker + controller in one process).
# Environment: KAFKA_NODE_ID, KAFKA_CLUSTER_ID, KAFKA_HOST (127.x), KAFKA_PORT, KAFKA_CONTROLLER_PORT,
# KAFKA_QUORUM_VOTERS (id@host:port,...), optional KAFKA_HEAP_OPTS.
# Arguments: extra broker settings as key=value, appended last so they win over the defaults above.
set -euo pipefail
: "${KAFKA_NODE_ID:?}" "${KAFKA_CLUSTER_ID:?}" "${KAFKA_HOST:?}" "${KAFKA_PORT:?}" "${KAFKA_CONTROLLER_PORT:?}"
: "${KAFKA_QUORUM_VOTERS:?}"
conf=/opt/kafka/config/server.properties
data=/var/lib/kafka/data
{
  echo "process.roles=broker,controller"
  echo "node.id=${KAFKA_NODE_ID}"
  echo "controller.quorum.voters=${KAFKA_QUORUM_VOTERS}"
  echo "listeners=PLAINTEXT://${KAFKA_HOST}:${KAFKA_PORT},CONTROLLER://${KAFKA_HOST}:${KAFKA_CONTROLLER_PORT}"
  echo "advertised.listeners=PLAINTEXT://${KAFKA_HOST}:${KAFKA_PORT}"
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  echo "controller.listener.names=CONTROLLER"
  echo "inter.broker.listener.name=PLAINTEXT"
  echo "log.dirs=${data}"
  for setting in "$@"; do
    case "$setting" in
      *=*) echo "$setting" ;;
      *) echo "entrypoint: broker setting '$setting' is not key=value" >&2; exit 2 ;;
    esac
  done
} >"$conf"
cp=$(echo /opt/kafka/libs/*.jar | tr ' ' ':')
# A restarted container keeps its data directory: format only once.
java -cp "$cp" -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml kafka.tools.StorageTool format \
  -t "$KAFKA_CLUSTER_ID" -c "$conf" --ignore-formatted >/dev/null
exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx768m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
  -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml \
  -cp "$cp" kafka.Kafka "$conf"
