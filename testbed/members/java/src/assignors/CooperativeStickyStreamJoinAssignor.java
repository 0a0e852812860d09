// "sticky-stream-join-cooperative": numbers that stay with their member are never revoked.
// testbed's CooperativeStickyStreamJoinAssignor: the eager class's core and user data; SeedAssignor stages the moves over two rounds.
package testbed.assignors;

public class CooperativeStickyStreamJoinAssignor extends StickyStreamJoinAssignor {
    @Override
    protected boolean cooperative() { return true; }
}
