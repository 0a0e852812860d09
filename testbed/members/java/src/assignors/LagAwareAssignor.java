// KIP-169 (seed 001) in Java: the lag-aware assignor of testbed/assignors/lag_aware.py, protocol "lag-aware".
// Per topic (in name order), partitions in decreasing lag (equal lags by partition number) each go to the
// subscribed member with the fewest partitions of that topic, then the least lag of that topic, then the smallest
// member id. No user data. The leader reads committed, beginning and end offsets with a short-lived Admin client
// built from its consumer's own settings (the KIP: "it may be more appropriate to obtain offsets via the new
// Admin API"); a failed fetch is logged and the partitions count as lag 0, so the rebalance still finishes.
package testbed.assignors;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SortedMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LagAwareAssignor extends SeedAssignor implements Configurable {
    private static final Logger LOG = LoggerFactory.getLogger(LagAwareAssignor.class);
    static final long FETCH_TIMEOUT_MS = 5_000;  // per request, as testbed.assignors.offsets_fetch

    /** Offsets of one partition as the leader saw them; committed is null when the group never committed. */
    public record PartitionOffsets(long beginning, long end, Long committed) {}

    /** Where the leader's offsets come from (the broker by default; a table in tests). */
    public interface OffsetsSource {
        Map<TopicPartition, PartitionOffsets> fetch(Collection<TopicPartition> partitions) throws Exception;
    }

    private Map<String, Object> consumerConfigs = Map.of();
    private String autoOffsetReset = "latest";  // the Java consumer's default, as kafka-python's
    private OffsetsSource offsetsSource;

    public LagAwareAssignor() {}

    public LagAwareAssignor(OffsetsSource offsetsSource) { this.offsetsSource = offsetsSource; }

    @Override
    protected String eagerName() { return "lag-aware"; }

    /** "topic": KIP-169; "group": balanced across topics too (GroupLagAwareAssignor). */
    protected boolean groupScope() { return false; }

    @Override
    public void configure(Map<String, ?> configs) {
        this.consumerConfigs = new HashMap<>(configs);
        Object reset = configs.get("auto.offset.reset");
        if (reset != null) this.autoOffsetReset = resetPolicy(reset, "auto.offset.reset");
    }

    /** auto.offset.reset as KIP-169 reads it: latest (or kafka-python's largest) means a never-committed partition
     * has no lag; earliest "or any other value" counts the whole log. */
    public static String resetPolicy(Object value, String key) {
        if (!(value instanceof String)) throw new ConfigException(key, value, "must be a string such as earliest or latest");
        String v = ((String) value).strip().toLowerCase(Locale.ROOT);
        if (v.equals("smallest")) return "earliest";
        if (v.equals("largest")) return "latest";
        return v;
    }

    public static long partitionLag(PartitionOffsets o, String autoOffsetReset) {
        if (o.committed() == null) return resetPolicy(autoOffsetReset, "auto.offset.reset").equals("latest")
                ? 0 : Math.max(0, o.end() - o.beginning());
        return Math.max(0, o.end() - o.committed());
    }

    @Override
    protected Result assignCore(SortedMap<String, Integer> partitionsPerTopic, List<Member> members) {
        List<TopicPartition> wanted = new ArrayList<>();
        partitionsPerTopic.forEach((t, n) -> { for (int p = 0; p < n; p++) wanted.add(new TopicPartition(t, p)); });
        Map<TopicPartition, PartitionOffsets> offsets = fetchOffsets(wanted);
        Map<String, long[]> lags = new HashMap<>();
        partitionsPerTopic.forEach((t, n) -> {
            long[] row = new long[n];
            for (int p = 0; p < n; p++) {
                PartitionOffsets o = offsets.get(new TopicPartition(t, p));
                if (o != null) row[p] = partitionLag(o, autoOffsetReset);
            }
            lags.put(t, row);
        });
        return assignLagAware(partitionsPerTopic, members, lags, groupScope());
    }

    /** testbed.assignors.lag_aware.assign_lag_aware: a heap keyed (count of this topic, count so far, lag, member
     * index); the second and third place are the group scope's (0 and the lag of this topic under the KIP). */
    public static Result assignLagAware(SortedMap<String, Integer> partitionsPerTopic, List<Member> members,
                                        Map<String, long[]> lags, boolean group) {
        Map<String, SortedMap<String, List<Integer>>> assignment = startAssignment(members);
        List<String> ids = sortedIds(members);
        Map<String, Member> byId = new HashMap<>();
        for (Member m : members) byId.put(m.id(), m);
        Map<String, Long> groupLag = new HashMap<>();
        Map<String, Long> groupCount = new HashMap<>();
        for (String id : ids) { groupLag.put(id, 0L); groupCount.put(id, 0L); }
        for (Map.Entry<String, Integer> entry : partitionsPerTopic.entrySet()) {
            String topic = entry.getKey();
            int count = entry.getValue();
            List<String> subscribers = new ArrayList<>();
            for (String id : ids) if (byId.get(id).topics().contains(topic)) subscribers.add(id);
            if (subscribers.isEmpty() || count == 0) continue;
            long[] topicLags = lags.getOrDefault(topic, new long[count]);
            List<Integer> order = new ArrayList<>();
            for (int p = 0; p < count; p++) order.add(p);
            order.sort((a, b) -> topicLags[a] != topicLags[b] ? Long.compare(topicLags[b], topicLags[a]) : Integer.compare(a, b));
            PriorityQueue<long[]> heap = new PriorityQueue<>((x, y) -> {
                for (int i = 0; i < 4; i++) if (x[i] != y[i]) return Long.compare(x[i], y[i]);
                return 0;
            });
            for (int i = 0; i < subscribers.size(); i++) {
                String id = subscribers.get(i);
                heap.add(new long[] {0, group ? groupCount.get(id) : 0, group ? groupLag.get(id) : 0, i});
            }
            List<List<Integer>> perMember = new ArrayList<>();
            for (int i = 0; i < subscribers.size(); i++) perMember.add(new ArrayList<>());
            for (int p : order) {
                long[] top = heap.poll();
                heap.add(new long[] {top[0] + 1, group ? top[1] + 1 : 0, top[2] + topicLags[p], top[3]});
                perMember.get((int) top[3]).add(p);
            }
            for (int i = 0; i < subscribers.size(); i++) {
                List<Integer> mine = perMember.get(i);
                if (mine.isEmpty()) continue;
                String id = subscribers.get(i);
                mine.sort(null);
                assignment.get(id).put(topic, mine);
                long lag = 0;
                for (int p : mine) lag += topicLags[p];
                groupLag.put(id, groupLag.get(id) + lag);
                groupCount.put(id, groupCount.get(id) + mine.size());
            }
        }
        return new Result(assignment, sameUserData(members, new byte[0]));
    }

    private Map<TopicPartition, PartitionOffsets> fetchOffsets(List<TopicPartition> partitions) {
        try {
            if (offsetsSource != null) return offsetsSource.fetch(partitions);
            if (consumerConfigs.get("bootstrap.servers") == null || consumerConfigs.get("group.id") == null) {
                LOG.warn("lag-aware: no bootstrap.servers/group.id configured; lags unknown, balancing counts only");
                return Map.of();
            }
            return fetchFromBroker(partitions);
        } catch (Exception e) {  // the rebalance must still finish; count balance is the KIP's first goal anyway
            LOG.warn("lag-aware: fetching offsets failed; lags unknown, balancing counts only", e);
            return Map.of();
        }
    }

    /** Committed offsets of the group, beginning and end offsets: one short-lived Admin client with the
     * consumer's connection and security settings. */
    private Map<TopicPartition, PartitionOffsets> fetchFromBroker(List<TopicPartition> partitions) throws Exception {
        Map<String, Object> adminConfigs = new HashMap<>();
        consumerConfigs.forEach((k, v) -> { if (AdminClientConfig.configNames().contains(k)) adminConfigs.put(k, v); });
        adminConfigs.put(AdminClientConfig.CLIENT_ID_CONFIG, consumerConfigs.getOrDefault("client.id", "consumer") + "-lag-aware");
        adminConfigs.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) FETCH_TIMEOUT_MS);
        adminConfigs.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) FETCH_TIMEOUT_MS);
        Admin admin = Admin.create(adminConfigs);
        try {
            String groupId = String.valueOf(consumerConfigs.get("group.id"));
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(groupId)
                    .partitionsToOffsetAndMetadata().get(FETCH_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition tp : partitions) { earliest.put(tp, OffsetSpec.earliest()); latest.put(tp, OffsetSpec.latest()); }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> begin =
                    admin.listOffsets(earliest).all().get(FETCH_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> end =
                    admin.listOffsets(latest).all().get(FETCH_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            Map<TopicPartition, PartitionOffsets> out = new HashMap<>();
            for (TopicPartition tp : partitions) {
                if (!begin.containsKey(tp) || !end.containsKey(tp)) continue;
                OffsetAndMetadata c = committed.get(tp);
                out.put(tp, new PartitionOffsets(begin.get(tp).offset(), end.get(tp).offset(), c == null ? null : c.offset()));
            }
            return out;
        } finally {
            admin.close(Duration.ofSeconds(1));
        }
    }
}
