// "lag-aware-cooperative": KIP-169's placement, moved by KIP-429's two rounds.
// testbed's CooperativeLagAwareAssignor: the eager class's core and user data; SeedAssignor stages the moves over two rounds.
package testbed.assignors;

public class CooperativeLagAwareAssignor extends LagAwareAssignor {
    public CooperativeLagAwareAssignor() {}

    public CooperativeLagAwareAssignor(OffsetsSource offsetsSource) { super(offsetsSource); }

    @Override
    protected boolean cooperative() { return true; }
}
