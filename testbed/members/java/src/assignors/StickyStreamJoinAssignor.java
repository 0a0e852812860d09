// The seed 003 sticky stream-join assignor in Java (testbed/assignors/stream_join.py), protocol "sticky-stream-join":
// partition numbers are assigned, a member with number n gets partition n of every group topic it subscribes to.
// Eligible numbers 0..N-1 (N the smallest partition count of the group's topics); claims from subscription user
// data, a conflicting claim to the higher epoch (ties: smaller member id); quotas N/M with the N%M extras to the
// members that owned most; each keeps up to its quota of its previous numbers (lowest first), the rest are handed
// out a member's k-th pick in round k, members in id order. New epoch = max claimed epoch + 1.
// User data, big-endian: subscription int16 version=0, int32 epoch, int32 count, count x int32 owned numbers;
// assignment int16 version=0, int32 epoch.
package testbed.assignors;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.common.TopicPartition;

public class StickyStreamJoinAssignor extends SeedAssignor {
    static final short USER_DATA_VERSION = 0;
    static final int NO_EPOCH = 0;

    /** What a member says it owned after the last assignment it received. */
    public record Claim(int epoch, int[] partitions) {}

    private int epoch = NO_EPOCH;
    private int[] ownedNumbers = new int[0];

    @Override
    protected String eagerName() { return "sticky-stream-join"; }

    @Override
    protected byte[] userData() { return encodeSubscription(epoch, ownedNumbers); }

    @Override
    public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
        epoch = decodeAssignment(bytes(assignment.userData()));
        Set<Integer> numbers = new TreeSet<>();
        for (TopicPartition tp : assignment.partitions()) numbers.add(tp.partition());
        ownedNumbers = numbers.stream().mapToInt(Integer::intValue).toArray();
    }

    public static byte[] encodeSubscription(int epoch, int[] partitions) {
        int[] numbers = new TreeSet<>(java.util.Arrays.stream(partitions).boxed().toList()).stream()
                .mapToInt(Integer::intValue).toArray();
        ByteBuffer out = ByteBuffer.allocate(10 + 4 * numbers.length).putShort(USER_DATA_VERSION).putInt(epoch).putInt(numbers.length);
        for (int p : numbers) out.putInt(p);
        return out.array();
    }

    public static Claim decodeSubscription(String memberId, byte[] userData) {
        if (userData.length == 0) return new Claim(NO_EPOCH, new int[0]);
        ByteBuffer in = ByteBuffer.wrap(userData);
        try {
            short version = in.getShort();
            int claimEpoch = in.getInt();
            int count = in.getInt();
            if (version != USER_DATA_VERSION) throw new UserDataException("member '" + memberId
                    + "': stream-join subscription user data version " + version + ", expected " + USER_DATA_VERSION);
            if (count < 0 || (long) count * 4 > in.remaining()) throw new BufferUnderflowException();
            int[] numbers = new int[count];
            for (int i = 0; i < count; i++) numbers[i] = in.getInt();
            return new Claim(claimEpoch, numbers);
        } catch (BufferUnderflowException e) {
            throw new UserDataException("member '" + memberId + "': stream-join subscription user data must be int16 "
                    + "version, int32 epoch, int32 count, count x int32 partitions (" + userData.length
                    + " bytes could not be read)");
        }
    }

    public static byte[] encodeAssignment(int epoch) {
        return ByteBuffer.allocate(6).putShort(USER_DATA_VERSION).putInt(epoch).array();
    }

    /** The epoch of an assignment; NO_EPOCH when the data is absent. */
    public static int decodeAssignment(byte[] userData) {
        if (userData.length == 0) return NO_EPOCH;
        if (userData.length < 6) throw new UserDataException("stream-join assignment user data must be int16 version "
                + "+ int32 epoch, got " + userData.length + " bytes");
        ByteBuffer in = ByteBuffer.wrap(userData);
        short version = in.getShort();
        if (version != USER_DATA_VERSION) throw new UserDataException("stream-join assignment user data version "
                + version + ", expected " + USER_DATA_VERSION);
        return in.getInt();
    }

    @Override
    protected Result assignCore(SortedMap<String, Integer> partitionsPerTopic, List<Member> members) {
        Map<String, SortedMap<String, List<Integer>>> assignment = startAssignment(members);
        Set<String> groupTopics = new HashSet<>();
        for (Member m : members) for (String t : m.topics()) if (partitionsPerTopic.containsKey(t)) groupTopics.add(t);
        int n = groupTopics.stream().mapToInt(partitionsPerTopic::get).min().orElse(0);
        Map<String, Claim> claims = new HashMap<>();
        int maxEpoch = NO_EPOCH;
        boolean anyClaim = false;
        for (Member m : members) {
            Claim c = decodeSubscription(m.id(), m.userData());
            claims.put(m.id(), c);
            maxEpoch = anyClaim ? Math.max(maxEpoch, c.epoch()) : c.epoch();
            anyClaim = true;
        }
        int nextEpoch = maxEpoch + 1;
        // A member none of whose topics exist yet cannot use any number; giving it one would strand it.
        List<String> eligible = new ArrayList<>();
        for (String id : sortedIds(members)) {
            Member m = members.stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow();
            if (m.topics().stream().anyMatch(groupTopics::contains)) eligible.add(id);
        }
        if (!eligible.isEmpty() && n > 0) {
            Map<String, List<Integer>> numbers = assignNumbers(n, eligible, claims);
            for (Member m : members) {
                List<Integer> mine = numbers.get(m.id());
                if (mine == null || mine.isEmpty()) continue;
                for (String topic : m.topics()) if (groupTopics.contains(topic)) assignment.get(m.id()).put(topic, new ArrayList<>(mine));
            }
        }
        return new Result(assignment, sameUserData(members, encodeAssignment(nextEpoch)));
    }

    static Map<String, List<Integer>> assignNumbers(int n, List<String> eligible, Map<String, Claim> claims) {
        Map<String, Integer> order = new HashMap<>();
        for (int i = 0; i < eligible.size(); i++) order.put(eligible.get(i), i);
        String[] owner = new String[n];
        List<String> byEpoch = new ArrayList<>(eligible);
        byEpoch.sort(Comparator.comparing((String m) -> -(long) claims.get(m).epoch()).thenComparing(m -> m));
        for (String m : byEpoch) for (int p : claims.get(m).partitions()) if (p >= 0 && p < n && owner[p] == null) owner[p] = m;
        Map<String, List<Integer>> previous = new HashMap<>();
        for (String m : eligible) previous.put(m, new ArrayList<>());
        for (int p = 0; p < n; p++) if (owner[p] != null) previous.get(owner[p]).add(p);

        int base = n / eligible.size(), extra = n % eligible.size();
        List<String> byPrevious = new ArrayList<>(eligible);
        byPrevious.sort(Comparator.comparing((String m) -> -previous.get(m).size()).thenComparing(order::get));
        Map<String, Integer> quota = new HashMap<>();
        for (int i = 0; i < byPrevious.size(); i++) quota.put(byPrevious.get(i), base + (i < extra ? 1 : 0));

        Map<String, List<Integer>> result = new HashMap<>();
        boolean[] taken = new boolean[n];
        for (String m : eligible) {
            List<Integer> kept = new ArrayList<>(previous.get(m).subList(0, Math.min(quota.get(m), previous.get(m).size())));
            kept.forEach(p -> taken[p] = true);
            result.put(m, kept);
        }
        List<Integer> free = new ArrayList<>();
        for (int p = 0; p < n; p++) if (!taken[p]) free.add(p);
        List<int[]> slots = new ArrayList<>();  // (round, member index): a member's k-th pick happens in round k
        for (String m : eligible) {
            int kept = result.get(m).size();
            for (int j = 0; j < quota.get(m) - kept; j++) slots.add(new int[] {kept + j, order.get(m)});
        }
        slots.sort(Comparator.comparingInt((int[] s) -> s[0]).thenComparingInt(s -> s[1]));
        if (slots.size() != free.size()) throw new IllegalStateException(slots.size() + " picks for " + free.size() + " free numbers");
        for (int i = 0; i < slots.size(); i++) result.get(eligible.get(slots.get(i)[1])).add(free.get(i));
        result.values().forEach(l -> l.sort(null));
        return result;
    }
}
