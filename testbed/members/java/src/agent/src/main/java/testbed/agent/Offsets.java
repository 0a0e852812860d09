package testbed.agent;

import java.util.ArrayList;
import java.util.List;

/** Committed offsets, by partition, in the order given (sorted before they are written). */
public final class Offsets {
    final List<String> topics = new ArrayList<>();
    final List<Integer> partitions = new ArrayList<>();
    final List<Long> offsets = new ArrayList<>();

    void add(String topic, int partition, long offset) {
        topics.add(topic);
        partitions.add(partition);
        offsets.add(offset);
    }

    int size() {
        return topics.size();
    }

    /** The indexes of (topic, partition) pairs in topic, then partition order: the order the history lists them in. */
    static Integer[] order(List<String> topics, List<Integer> partitions) {
        Integer[] order = new Integer[topics.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        java.util.Arrays.sort(order, (a, b) -> {
            int c = topics.get(a).compareTo(topics.get(b));
            return c != 0 ? c : Integer.compare(partitions.get(a), partitions.get(b));
        });
        return order;
    }

    Offsets sorted() {
        Integer[] order = order(topics, partitions);
        Offsets out = new Offsets();
        for (int i : order) {
            out.add(topics.get(i), partitions.get(i), offsets.get(i));
        }
        return out;
    }
}
