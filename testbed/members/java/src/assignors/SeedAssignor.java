// The shared translation of testbed's seed assignors in Java (the same algorithms, protocol names and user data
// as the Python cores in testbed/assignors, docs/assignors.md): the group's subscriptions and partition counts
// in, one core call, an Assignment per member out. Subclasses supply eagerName(), their subscription user data and
// assignCore(). They are EAGER (the ConsumerPartitionAssignor default), as the kafka-python adapters are; a
// subclass that answers cooperative() true is the KIP-429 variant (name + "-cooperative", COOPERATIVE and EAGER
// supported) and stages its moves over two rounds by the rule of testbed/assignors/cooperative.py.
package testbed.assignors;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public abstract class SeedAssignor implements ConsumerPartitionAssignor {
    private static final Logger LOG = LoggerFactory.getLogger(SeedAssignor.class);

    /** What one member told the leader: the cores' MemberSubscription (owned partitions and their generation are
     * KIP-429's, reported by the Java coordinator itself; -1: unknown). */
    public record Member(String id, Set<String> topics, byte[] userData, List<TopicPartition> owned, int generation) {}

    /** A core's answer: per member, per topic, sorted partitions; per member the assignment user data. */
    public record Result(Map<String, SortedMap<String, List<Integer>>> partitions, Map<String, byte[]> userData) {}

    /** A member's user data that cannot be decoded; the message names the member and the layout. */
    public static final class UserDataException extends IllegalArgumentException {
        public UserDataException(String message) { super(message); }
    }

    public static final String COOPERATIVE_SUFFIX = "-cooperative";

    /** The target a cooperative round withheld partitions from, kept for the follow-up round of the same membership. */
    private Pending pending;

    private record Pending(Object membershipKey, Result target) {}

    protected abstract Result assignCore(SortedMap<String, Integer> partitionsPerTopic, List<Member> members);

    /** True for the KIP-429 variant of an assignor (a subclass named Cooperative...). */
    protected boolean cooperative() { return false; }

    /** The eager protocol name; the cooperative variant's is this + "-cooperative" (every member must agree on it). */
    protected abstract String eagerName();

    @Override
    public final String name() { return cooperative() ? eagerName() + COOPERATIVE_SUFFIX : eagerName(); }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        // COOPERATIVE first; EAGER too, as Java's CooperativeStickyAssignor: [eager, cooperative] runs eager, the first
        // bounce of KIP-429's double bounce
        return cooperative() ? List.of(RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER) : List.of(RebalanceProtocol.EAGER);
    }

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
            members.add(new Member(e.getKey(), Set.copyOf(s.topics()), bytes(s.userData()),
                    s.ownedPartitions() == null ? List.of() : s.ownedPartitions(), s.generationId().orElse(-1)));
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
        Result result = cooperative() ? cooperativeRound(partitionsPerTopic, members)
                : assignCore(partitionsPerTopic, members);
        Map<String, Assignment> assignments = new HashMap<>();
        for (Member m : members) {
            List<TopicPartition> parts = new ArrayList<>();
            result.partitions().getOrDefault(m.id(), Collections.emptySortedMap()).forEach(
                    (topic, ps) -> ps.forEach(p -> parts.add(new TopicPartition(topic, p))));
            assignments.put(m.id(), new Assignment(parts, ByteBuffer.wrap(result.userData().getOrDefault(m.id(), new byte[0]))));
        }
        return new GroupAssignment(assignments);
    }

    /** testbed.assignors.cooperative: the eager target minus every partition whose current owner (a claim of the
     * newest generation reported) is another member, or that two such members claim; their owners revoke them and
     * the follow-up round, which the revocation triggers, assigns them from the same target. */
    private Result cooperativeRound(SortedMap<String, Integer> partitionsPerTopic, List<Member> members) {
        SortedMap<String, SortedSet<String>> topicsById = new TreeMap<>();
        for (Member m : members) topicsById.put(m.id(), new TreeSet<>(m.topics()));
        Object key = List.of(new TreeMap<>(partitionsPerTopic), topicsById);
        boolean followUp = pending != null && pending.membershipKey().equals(key);
        Result target = followUp ? pending.target() : assignCore(partitionsPerTopic, members);
        int newest = members.stream().mapToInt(Member::generation).max().orElse(-1);
        Map<TopicPartition, String> owners = new HashMap<>();
        Set<TopicPartition> disputed = new HashSet<>();
        for (Member m : members) {
            if (m.generation() != newest) continue;  // -1 (no generation reported) counts when it is the newest
            for (TopicPartition tp : m.owned()) {
                String previous = owners.putIfAbsent(tp, m.id());
                if (previous != null && !previous.equals(m.id())) disputed.add(tp);
            }
        }
        Map<String, SortedMap<String, List<Integer>>> partitions = new HashMap<>();
        boolean withheld = false;
        for (Map.Entry<String, SortedMap<String, List<Integer>>> entry : target.partitions().entrySet()) {
            SortedMap<String, List<Integer>> kept = new TreeMap<>();
            for (Map.Entry<String, List<Integer>> byTopic : entry.getValue().entrySet()) {
                for (int p : byTopic.getValue()) {
                    TopicPartition tp = new TopicPartition(byTopic.getKey(), p);
                    String owner = owners.get(tp);
                    if (disputed.contains(tp) || (owner != null && !owner.equals(entry.getKey()))) withheld = true;
                    else kept.computeIfAbsent(byTopic.getKey(), t -> new ArrayList<>()).add(p);
                }
            }
            partitions.put(entry.getKey(), kept);
        }
        if (withheld) LOG.info("{}: partitions move; their owners revoke them, the follow-up round assigns them", name());
        pending = withheld ? new Pending(key, target) : null;
        return new Result(partitions, target.userData());
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
