#!/usr/bin/env bash
# Starts one KRaft node (broker + controller in one process).
# Environment: KAFKA_NODE_ID, KAFKA_CLUSTER_ID, KAFKA_HOST (127.x), KAFKA_PORT, KAFKA_CONTROLLER_PORT,
# KAFKA_QUORUM_VOTERS (id@host:port,...), optional KAFKA_HEAP_OPTS and KAFKA_JVM_OPTS (further JVM options of
# the broker). With a proxy in front of the clients' listener: KAFKA_ADVERTISED_PORT (the proxy's port, given to
# clients) and KAFKA_INTERNAL_PORT (a listener of its own for replication, so that only clients pass the proxy).
# Arguments: extra broker settings as key=value, appended last so they win over the defaults above.
# KAFKA_CLASS_ARCHIVE=dump (class-archive.sh, at the image's build only): each JVM writes the classes it loaded at exit.
set -euo pipefail
: "${KAFKA_NODE_ID:?}" "${KAFKA_CLUSTER_ID:?}" "${KAFKA_HOST:?}" "${KAFKA_PORT:?}" "${KAFKA_CONTROLLER_PORT:?}"
: "${KAFKA_QUORUM_VOTERS:?}"
conf=/opt/kafka/config/server.properties
data=/var/lib/kafka/data
listeners="PLAINTEXT://${KAFKA_HOST}:${KAFKA_PORT},CONTROLLER://${KAFKA_HOST}:${KAFKA_CONTROLLER_PORT}"
advertised="PLAINTEXT://${KAFKA_HOST}:${KAFKA_ADVERTISED_PORT:-$KAFKA_PORT}"
protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
inter_broker=PLAINTEXT
if [[ -n "${KAFKA_INTERNAL_PORT:-}" ]]; then
  listeners+=",INTERNAL://${KAFKA_HOST}:${KAFKA_INTERNAL_PORT}"
  advertised+=",INTERNAL://${KAFKA_HOST}:${KAFKA_INTERNAL_PORT}"
  protocols+=",INTERNAL:PLAINTEXT"
  inter_broker=INTERNAL
fi
{
  echo "process.roles=broker,controller"
  echo "node.id=${KAFKA_NODE_ID}"
  echo "controller.quorum.voters=${KAFKA_QUORUM_VOTERS}"
  echo "listeners=${listeners}"
  echo "advertised.listeners=${advertised}"
  echo "listener.security.protocol.map=${protocols}"
  echo "controller.listener.names=CONTROLLER"
  echo "inter.broker.listener.name=${inter_broker}"
  echo "log.dirs=${data}"
  for setting in "$@"; do
    case "$setting" in
      *=*) echo "$setting" ;;
      *) echo "entrypoint: broker setting '$setting' is not key=value" >&2; exit 2 ;;
    esac
  done
} >"$conf"
cp=$(echo /opt/kafka/libs/*.jar | tr ' ' ':')
# Class-data archives, made once at the image's build: the JVM maps the classes a start loads from them instead of
# reading and verifying them from the jars (on 2 cores: the storage tool 0.6 -> 0.3 s, the broker's start 2.0 -> 1.2 s).
# Without them (a JRE that cannot write one), or with one the JVM refuses, it reads the jars as before.
archives=/opt/kafka/class-archives
class_archive() {
  if [[ "${KAFKA_CLASS_ARCHIVE:-}" == dump ]]; then
    echo "-XX:ArchiveClassesAtExit=$archives/$1.jsa"
  elif [[ -f "$archives/$1.jsa" ]]; then
    echo "-XX:SharedArchiveFile=$archives/$1.jsa"
  fi
}
# A restarted container keeps its data directory: format only once (--ignore-formatted).
format=(format -t "$KAFKA_CLUSTER_ID" -c "$conf" --ignore-formatted)
launcher=/opt/kafka/launcher
if [[ -f "$launcher/testbed-kafka-start.jar" ]]; then
  # The format and the node in one JVM (TestbedKafkaStart.java): no second JVM's start. Built in when the image's
  # build saw a node start through it (class-archive.sh).
  main=(-cp "$cp:$launcher/testbed-kafka-start.jar" TestbedKafkaStart "${format[@]}" -- kafka.Kafka "$conf")
else
  # A one-shot JVM for the format: C1 and the serial GC halve its start-up CPU.
  # shellcheck disable=SC2046  # an option or none
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC $(class_archive storage-tool) \
    -cp "$cp" -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml kafka.tools.StorageTool "${format[@]}" >/dev/null
  main=(-cp "$cp" kafka.Kafka "$conf")
fi
# shellcheck disable=SC2086,SC2046  # KAFKA_JVM_OPTS is a list of options
exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx768m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 $(class_archive broker) \
  ${KAFKA_JVM_OPTS:-} \
  -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml \
  "${main[@]}"
