// Test driver for tests/unit/test_java_assignors.py: one JSON case a line on stdin, one JSON result a line on
// stdout. Each case runs a seed assignor the way a KafkaConsumer runs it: configure() with the case's consumer
// settings, assign() with a Cluster and the group's Subscriptions (user data, owned partitions, generation),
// and, when the case holds a received assignment, onAssignment() before subscriptionUserData().
//
// case:   {"assignor": protocol name, "slot_priority": bool, "config": {k: v}, "partitions": {topic: count},
//          "members": [{"id", "topics": [...], "user_data": base64, "owned": [[topic, p]], "generation": int}],
//          "offsets": [[topic, p, beginning, end, committed or null]] (lag-aware), "received": {"partitions":
//          [[topic, p]], "user_data": base64}}
//          "follow_up": [members] (a second assign() on the same instance, as a cooperative follow-up round),
//          "follow_up_offsets": the offsets it reads
// result: {"protocol": name(), "protocols": supportedProtocols(), "assignment": {member: [[topic, p]]},
//          "user_data": {member: base64}, "follow_up": {"assignment", "user_data"}, "subscription_user_data": base64}
//         or {"error": "<exception class>: <message>"}
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import testbed.assignors.CooperativeFailoverAssignor;
import testbed.assignors.CooperativeGroupLagAwareAssignor;
import testbed.assignors.CooperativeLagAwareAssignor;
import testbed.assignors.CooperativeSlotPriorityFailoverAssignor;
import testbed.assignors.CooperativeStickyStreamJoinAssignor;
import testbed.assignors.FailoverAssignor;
import testbed.assignors.GroupLagAwareAssignor;
import testbed.assignors.LagAwareAssignor;
import testbed.assignors.SeedAssignor;
import testbed.assignors.SlotPriorityFailoverAssignor;
import testbed.assignors.StickyStreamJoinAssignor;

public class AssignorVectors {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Base64.Encoder B64 = Base64.getEncoder();
    static boolean followingUp;  // the follow-up round reads follow_up_offsets

    static ConsumerPartitionAssignor assignor(JsonNode c) {
        String name = c.get("assignor").asText();
        LagAwareAssignor.OffsetsSource offsets = parts -> {
            Map<TopicPartition, LagAwareAssignor.PartitionOffsets> out = new HashMap<>();
            for (JsonNode o : c.path(followingUp ? "follow_up_offsets" : "offsets")) {
                TopicPartition tp = new TopicPartition(o.get(0).asText(), o.get(1).asInt());
                if (parts.contains(tp)) out.put(tp, new LagAwareAssignor.PartitionOffsets(o.get(2).asLong(), o.get(3).asLong(),
                        o.get(4).isNull() ? null : o.get(4).asLong()));
            }
            return out;
        };
        boolean slot = c.path("slot_priority").asBoolean();
        switch (name) {
            case "lag-aware": return new LagAwareAssignor(offsets);
            case "lag-aware-group": return new GroupLagAwareAssignor(offsets);
            case "failover": return slot ? new SlotPriorityFailoverAssignor() : new FailoverAssignor();
            case "sticky-stream-join": return new StickyStreamJoinAssignor();
            case "lag-aware-cooperative": return new CooperativeLagAwareAssignor(offsets);
            case "lag-aware-group-cooperative": return new CooperativeGroupLagAwareAssignor(offsets);
            case "failover-cooperative": return slot ? new CooperativeSlotPriorityFailoverAssignor() : new CooperativeFailoverAssignor();
            case "sticky-stream-join-cooperative": return new CooperativeStickyStreamJoinAssignor();
            default: throw new IllegalArgumentException("no assignor " + name);
        }
    }

    static byte[] b64(JsonNode node) { return node == null || node.isNull() ? new byte[0] : Base64.getDecoder().decode(node.asText()); }

    static List<TopicPartition> partitions(JsonNode pairs) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonNode pair : pairs) out.add(new TopicPartition(pair.get(0).asText(), pair.get(1).asInt()));
        return out;
    }

    static ObjectNode run(JsonNode c) {
        ConsumerPartitionAssignor a = assignor(c);
        Map<String, Object> config = new HashMap<>();
        c.path("config").fields().forEachRemaining(e -> config.put(e.getKey(), e.getValue().asText()));
        if (a instanceof Configurable) ((Configurable) a).configure(config);

        List<PartitionInfo> infos = new ArrayList<>();
        Node node = new Node(0, "127.0.0.1", 9);
        c.get("partitions").fields().forEachRemaining(e -> {
            for (int p = 0; p < e.getValue().asInt(); p++)
                infos.add(new PartitionInfo(e.getKey(), p, node, new Node[] {node}, new Node[] {node}));
        });
        Cluster cluster = new Cluster("vectors", List.of(node), infos, new HashSet<>(), new HashSet<>());
        ObjectNode out = JSON.createObjectNode().put("protocol", a.name());
        ArrayNode protocols = out.putArray("protocols");
        a.supportedProtocols().forEach(p -> protocols.add(p.name().toLowerCase()));
        assign(a, cluster, c.get("members"), out);
        // a second rebalance on the same instance (a cooperative follow-up round), its members' new subscriptions
        if (c.hasNonNull("follow_up")) {
            followingUp = true;
            try {
                assign(a, cluster, c.get("follow_up"), out.putObject("follow_up"));
            } finally {
                followingUp = false;
            }
        }
        JsonNode received = c.get("received");
        if (received != null && !received.isNull()) {
            a.onAssignment(new Assignment(partitions(received.get("partitions")), ByteBuffer.wrap(b64(received.get("user_data")))), null);
        }
        out.put("subscription_user_data", B64.encodeToString(SeedAssignor.bytes(a.subscriptionUserData(new HashSet<>()))));
        return out;
    }

    static void assign(ConsumerPartitionAssignor a, Cluster cluster, JsonNode members, ObjectNode out) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (JsonNode m : members) {
            List<String> topics = new ArrayList<>();
            m.get("topics").forEach(t -> topics.add(t.asText()));
            subscriptions.put(m.get("id").asText(), new Subscription(topics, ByteBuffer.wrap(b64(m.get("user_data"))),
                    partitions(m.path("owned")), m.path("generation").asInt(-1), Optional.empty()));
        }
        ObjectNode assignment = out.putObject("assignment");
        ObjectNode userData = out.putObject("user_data");
        Map<String, Assignment> result = new TreeMap<>(a.assign(cluster, new GroupSubscription(subscriptions)).groupAssignment());
        result.forEach((member, as) -> {
            ArrayNode parts = assignment.putArray(member);
            for (TopicPartition tp : as.partitions()) parts.addArray().add(tp.topic()).add(tp.partition());
            userData.put(member, B64.encodeToString(SeedAssignor.bytes(as.userData())));
        });
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode out;
            try {
                out = run(JSON.readTree(line));
            } catch (RuntimeException e) {
                out = JSON.createObjectNode().put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.println(JSON.writeValueAsString(out));
            System.out.flush();
        }
    }
}
