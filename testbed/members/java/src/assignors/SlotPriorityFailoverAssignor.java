// Failover with the priority derived from the testbed member's slot (testbed's SlotPriorityFailoverAssignor):
// priority = -slot, from the consumer setting testbed.member.slot that testbed's Java runners add; slot 0 ranks
// highest and keeps its slot across bounces. An explicit assignment.consumer.priority wins. Protocol "failover".
package testbed.assignors;

import java.util.Map;

import org.apache.kafka.common.config.ConfigException;

public class SlotPriorityFailoverAssignor extends FailoverAssignor {
    public static final String SLOT_CONFIG = "testbed.member.slot";

    @Override
    public void configure(Map<String, ?> configs) {
        if (firstConfigured(configs, PRIORITY_KEYS) != null) {
            super.configure(configs);
            return;
        }
        Object slot = configs.get(SLOT_CONFIG);
        int parsed;
        try {
            parsed = slot instanceof Integer ? (Integer) slot : Integer.parseInt(String.valueOf(slot).strip());
        } catch (NumberFormatException e) {
            parsed = -1;
        }
        if (parsed < 0) throw new ConfigException(SLOT_CONFIG, slot, "a member slot (int >= 0) is required to derive the "
                + "failover priority; or set " + PRIORITY_CONFIG);
        setPriority(-parsed);
    }
}
