package testbed.agent;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.util.Map;

/** The OffsetCommitCallback an asynchronous commit is given: records the answer (the offsets it names, else the ones
 * sent; its error), then calls the program's callback. A Proxy of the program's own interface, as RebalanceHandler. */
final class CommitHandler implements InvocationHandler {
    private final ConsumerState st;
    private final String trigger;
    private final Offsets sent;
    private final Object user;

    CommitHandler(ConsumerState st, String trigger, Offsets sent, Object user) {
        this.st = st;
        this.trigger = trigger;
        this.sent = sent;
        this.user = user;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        if (Proxies.isObjectMethod(method)) {
            return Proxies.objectMethod(proxy, method, args, "commit callback", user);
        }
        if (method.getName().equals("onComplete") && args != null && args.length == 2) {
            try {
                Offsets answered = new Offsets();
                if (args[0] instanceof Map) {
                    for (Map.Entry<?, ?> e : ((Map<?, ?>) args[0]).entrySet()) {
                        Object om = e.getValue();
                        long offset = (Long) om.getClass().getMethod("offset").invoke(om);
                        answered.add(Recorder.topicOf(e.getKey()), Recorder.partitionOf(e.getKey()), offset);
                    }
                }
                st.beforeAnswer();
                Recorder.committed(st, trigger, answered.size() > 0 ? answered : sent, (Throwable) args[1]);
            } catch (Throwable t) {
                st.agent.failed("commit callback", t);
            }
        }
        return Recorder.callProgram(method, user, args);
    }
}
