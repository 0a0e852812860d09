// lag-aware balanced across topics too (beyond KIP-169), protocol "lag-aware-group": testbed's
// GroupLagAwareAssignor. Per-topic counts as the KIP; ties broken by each member's partition count, then lag,
// over every topic assigned so far.
package testbed.assignors;

public class GroupLagAwareAssignor extends LagAwareAssignor {
    public GroupLagAwareAssignor() {}

    public GroupLagAwareAssignor(OffsetsSource offsetsSource) { super(offsetsSource); }

    @Override
    protected String eagerName() { return "lag-aware-group"; }

    @Override
    protected boolean groupScope() { return true; }
}
