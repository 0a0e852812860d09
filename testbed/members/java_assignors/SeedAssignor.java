// The shared translation of testbed's seed assignors in Java (the same algorithms, protocol names and user data
// as the Python cores in testbed/assignors, docs/assignors.md): the group's subscriptions and partition counts
// in, one core call, an Assignment per member out. Subclasses supply name(), their subscription user data and
// assignCore(). They are EAGER (the ConsumerPartitionAssignor default), as the kafka-python adapters are.
package testbed.assignors;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public abstract class SeedAssignor implements ConsumerPartitionAssignor {
    private static final Logger LOG = LoggerFactory.getLogger(SeedAssignor.class);

    /** What one member told the leader: the cores' MemberSubscription. */
    public record Member(String id, Set<String> topics, byte[] userData) {}

    /** A core's answer: per member, per topic, sorted partitions; per member the assignment user data. */
    public record Result(Map<String, SortedMap<String, List<Integer>>> partitions, Map<String, byte[]> userData) {}

    /** A member's user data that cannot be decoded; the message names the member and the layout. */
    public static final class UserDataException extends IllegalArgumentException {
        public UserDataException(String message) { super(message); }
    }

    protected abstract Result assignCore(SortedMap<String, Integer> partitionsPerTopic, List<Member> members);

    /** This member's subscription user data; empty by default (never null, as the Python side sends b""). */
    protected byte[] userData() { return new byte[0]; }

    @Override
    public ByteBuffer subscriptionUserData(Set<String> topics) {
        return ByteBuffer.wrap(userData());
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        Map<String, Subscription> subscriptions = groupSubscription.groupSubscription();
        List<Member> members = new ArrayList<>();
        Set<String> topics = new TreeSet<>();
        for (Map.Entry<String, Subscription> e : subscriptions.entrySet()) {
            Subscription s = e.getValue();
            members.add(new Member(e.getKey(), Set.copyOf(s.topics()), bytes(s.userData())));
            topics.addAll(s.topics());
        }
        SortedMap<String, Integer> partitionsPerTopic = new TreeMap<>();
        for (String topic : topics) {
            Integer count = metadata.partitionCountForTopic(topic);
            if (count == null) {
                LOG.warn("no partition metadata for topic {}; it is left out of this assignment", topic);
                continue;
            }
            partitionsPerTopic.put(topic, count);
        }
        Result result = assignCore(partitionsPerTopic, members);
        Map<String, Assignment> assignments = new HashMap<>();
        for (Member m : members) {
            List<TopicPartition> parts = new ArrayList<>();
            result.partitions().getOrDefault(m.id(), Collections.emptySortedMap()).forEach(
                    (topic, ps) -> ps.forEach(p -> parts.add(new TopicPartition(topic, p))));
            assignments.put(m.id(), new Assignment(parts, ByteBuffer.wrap(result.userData().getOrDefault(m.id(), new byte[0]))));
        }
        return new GroupAssignment(assignments);
    }

    /** The remaining bytes of a buffer, without moving it; null gives none. */
    public static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) return new byte[0];
        ByteBuffer copy = buffer.duplicate();
        byte[] out = new byte[copy.remaining()];
        copy.get(out);
        return out;
    }

    /** Member ids in the order the Python cores sort them (code points; the same as compareTo for ids without
     * surrogate pairs, which Kafka's ids never hold). */
    public static List<String> sortedIds(List<Member> members) {
        List<String> ids = new ArrayList<>();
        for (Member m : members) ids.add(m.id());
        Collections.sort(ids);
        return ids;
    }

    /** The empty per-member assignment a core fills in. */
    public static Map<String, SortedMap<String, List<Integer>>> startAssignment(List<Member> members) {
        Map<String, SortedMap<String, List<Integer>>> out = new HashMap<>();
        for (Member m : members) out.put(m.id(), new TreeMap<>());
        return out;
    }

    /** The same assignment user data for every member. */
    public static Map<String, byte[]> sameUserData(List<Member> members, byte[] data) {
        Map<String, byte[]> out = new HashMap<>();
        for (Member m : members) out.put(m.id(), data);
        return out;
    }

    /** The configured value of the first of these keys present in a consumer's configs; null when none is. */
    static Map.Entry<String, Object> firstConfigured(Map<String, ?> configs, String... keys) {
        for (String key : keys) {
            if (configs.containsKey(key) && configs.get(key) != null) return Map.entry(key, configs.get(key));
        }
        return null;
    }
}
