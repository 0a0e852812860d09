// "lag-aware-group-cooperative": lag-aware balanced across topics, moved by KIP-429's two rounds.
// testbed's CooperativeGroupLagAwareAssignor: the eager class's core and user data; SeedAssignor stages the moves over two rounds.
package testbed.assignors;

public class CooperativeGroupLagAwareAssignor extends GroupLagAwareAssignor {
    public CooperativeGroupLagAwareAssignor() {}

    public CooperativeGroupLagAwareAssignor(OffsetsSource offsetsSource) { super(offsetsSource); }

    @Override
    protected boolean cooperative() { return true; }
}
