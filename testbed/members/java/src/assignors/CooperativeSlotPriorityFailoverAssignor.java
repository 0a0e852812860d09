// "failover-cooperative": priority from the member's slot, as SlotPriorityFailoverAssignor.
// testbed's CooperativeSlotPriorityFailoverAssignor: the eager class's core and user data; SeedAssignor stages the moves over two rounds.
package testbed.assignors;

public class CooperativeSlotPriorityFailoverAssignor extends SlotPriorityFailoverAssignor {
    @Override
    protected boolean cooperative() { return true; }
}
