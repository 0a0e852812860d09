// The seed 002 failover assignor in Java (testbed/assignors/failover.py), protocol "failover": every partition of
// a topic to its highest-priority subscriber, ties to the smallest member id. Subscription user data: 4 bytes,
// big-endian int32 priority (the seed's ByteBuffer.putInt). Configured as the seed configures it:
// assignment.consumer.priority, an int or its decimal string; none: Integer.MAX_VALUE (the seed's ConfigDef default).
// Empty user data ranks below every priority; any other length than 4 is refused, naming the member.
package testbed.assignors;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;

import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.config.ConfigException;

public class FailoverAssignor extends SeedAssignor implements Configurable {
    public static final String PRIORITY_CONFIG = "assignment.consumer.priority";
    // kafka-python's spelling, accepted too so one properties table serves both clients
    static final String[] PRIORITY_KEYS = {"assignment_consumer_priority", PRIORITY_CONFIG};
    static final long UNCONFIGURED_PRIORITY = (long) Integer.MIN_VALUE - 1;

    private int priority = Integer.MAX_VALUE;

    @Override
    protected String eagerName() { return "failover"; }

    @Override
    public void configure(Map<String, ?> configs) {
        Map.Entry<String, Object> configured = firstConfigured(configs, PRIORITY_KEYS);
        if (configured != null) priority = parsePriority(configured.getValue(), configured.getKey());
    }

    public int priority() { return priority; }

    protected void setPriority(int priority) { this.priority = priority; }

    /** An int32 or its (trimmed) decimal string, as Kafka's ConfigDef.Type.INT; anything else is refused. */
    public static int parsePriority(Object value, String key) {
        if (value instanceof Integer) return (Integer) value;
        if (value instanceof Long || value instanceof Short) {
            long v = ((Number) value).longValue();
            if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) return (int) v;
        } else if (value instanceof String) {
            try {
                return Integer.parseInt(((String) value).strip(), 10);
            } catch (NumberFormatException e) {
                // refused below
            }
        }
        throw new ConfigException(key, value, "must be an int32 or its decimal string");
    }

    @Override
    protected byte[] userData() { return ByteBuffer.allocate(4).putInt(priority).array(); }

    public static long decodePriority(String memberId, byte[] userData) {
        if (userData.length == 0) return UNCONFIGURED_PRIORITY;
        if (userData.length != 4) throw new UserDataException("member '" + memberId + "': failover user data must be 4 bytes "
                + "(big-endian int32 priority), got " + userData.length + " bytes");
        return ByteBuffer.wrap(userData).getInt();
    }

    @Override
    protected Result assignCore(SortedMap<String, Integer> partitionsPerTopic, List<Member> members) {
        Map<String, SortedMap<String, List<Integer>>> assignment = startAssignment(members);
        List<Member> order = new ArrayList<>(members);
        Map<String, Long> priorities = new java.util.HashMap<>();
        for (Member m : members) priorities.put(m.id(), decodePriority(m.id(), m.userData()));
        order.sort(Comparator.comparing((Member m) -> -priorities.get(m.id())).thenComparing(Member::id));
        partitionsPerTopic.forEach((topic, count) -> {
            if (count == 0) return;
            for (Member m : order) {
                if (m.topics().contains(topic)) {
                    List<Integer> all = new ArrayList<>();
                    for (int p = 0; p < count; p++) all.add(p);
                    assignment.get(m.id()).put(topic, all);
                    return;
                }
            }
        });
        return new Result(assignment, sameUserData(members, new byte[0]));
    }
}
