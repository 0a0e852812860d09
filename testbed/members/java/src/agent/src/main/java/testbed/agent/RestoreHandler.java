package testbed.agent;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;

/** The StateRestoreListener a program's KafkaStreams is given: a `streams_restore` line per callback (start, batch,
 * end, suspended), then the program's own listener, if it set one. A Proxy of the program's interface. */
final class RestoreHandler implements InvocationHandler {
    private final Agent agent;
    private final Object user;

    RestoreHandler(Agent agent, Object user) {
        this.agent = agent;
        this.user = user;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (Proxies.isObjectMethod(method)) {
            return Proxies.objectMethod(proxy, method, args, "restore listener", user);
        }
        try {
            record(name, args);
        } catch (Throwable t) {
            agent.failed("streams_restore", t);
        }
        if (user != null) {
            return Recorder.callProgram(method, user, args);
        }
        return null; // every callback returns void
    }

    private void record(String name, Object[] args) throws Exception {
        String phase;
        Long start = null, end = null, records = null;
        switch (name) {
            case "onRestoreStart":
                phase = "start";
                start = (Long) args[2];
                end = (Long) args[3];
                break;
            case "onBatchRestored":
                phase = "batch";
                end = (Long) args[2];
                records = (Long) args[3];
                break;
            case "onRestoreEnd":
                phase = "end";
                records = (Long) args[2];
                break;
            case "onRestoreSuspended":
                phase = "suspended";
                records = (Long) args[2];
                break;
            default:
                return;
        }
        StringBuilder b = agent.history.begin("streams_restore");
        b.append(",\"phase\":\"").append(phase).append("\",\"store\":");
        Json.string(b, String.valueOf(args[1]));
        b.append(",\"topic\":");
        Json.string(b, Recorder.topicOf(args[0]));
        b.append(",\"partition\":").append(Recorder.partitionOf(args[0]));
        b.append(",\"start_offset\":").append(start).append(",\"end_offset\":").append(end)
                .append(",\"records\":").append(records);
        agent.history.line(b);
    }
}
