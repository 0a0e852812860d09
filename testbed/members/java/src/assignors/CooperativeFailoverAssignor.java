// "failover-cooperative": a failover hands every partition over in the follow-up round.
// testbed's CooperativeFailoverAssignor: the eager class's core and user data; SeedAssignor stages the moves over two rounds.
package testbed.assignors;

public class CooperativeFailoverAssignor extends FailoverAssignor {
    @Override
    protected boolean cooperative() { return true; }
}
