import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Formats a node's storage with Kafka's own StorageTool and then starts the node, in one JVM: a second JVM's start
 * for the format alone cost about 0.3 s of every broker's start on 2 cores (entrypoint.sh).
 *
 * <p>Arguments: the StorageTool's, then {@code --}, the node's main class ({@code kafka.Kafka}: on the command line,
 * where the host's sampler tells a broker's JVM by it) and its arguments. The tool ends by calling Kafka's
 * {@code Exit.exit}, which would end the JVM: its exit procedure is replaced meanwhile by one that hands the status
 * back here (the hook Kafka's own tests use), and restored before the node starts. Only reflection: one class file
 * serves every Kafka version whose {@code Exit} has that hook (the image's build checks that a node starts through
 * it, else the image formats in a JVM of its own: class-archive.sh).
 */
public final class TestbedKafkaStart {
    private static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status) {
            super("exit " + status, null, false, false);
            this.status = status;
        }
    }

    public static void main(String[] args) throws Throwable {
        int split = Arrays.asList(args).indexOf("--");
        if (split < 0 || split + 1 >= args.length) {
            System.err.println("TestbedKafkaStart: usage: <storage tool arguments> -- <main class> <its arguments>");
            System.exit(2);
        }
        int status;
        try {
            status = format(Arrays.copyOfRange(args, 0, split));
        } catch (Throwable failure) {
            // The cause last: the container's last log lines are what a failed start shows (a refused setting).
            failure.printStackTrace();
            System.err.println("TestbedKafkaStart: formatting the storage failed: " + failure);
            status = 1;
        }
        if (status != 0) {
            System.exit(status);
        }
        mainOf(args[split + 1]).invoke(null, (Object) Arrays.copyOfRange(args, split + 2, args.length));
    }

    // Where Kafka keeps its exit hook: a public class up to 3.x, an internal one since (4.x); set on each found.
    private static final String[] EXITS = {
        "org.apache.kafka.common.utils.internals.Exit", "org.apache.kafka.common.utils.Exit"};

    private static int format(String[] toolArgs) throws Throwable {
        List<Class<?>> exits = new ArrayList<>();
        for (String name : EXITS) {
            try {
                exits.add(Class.forName(name));
            } catch (ClassNotFoundException absent) {
                // the other one
            }
        }
        if (exits.isEmpty()) {
            throw new ClassNotFoundException(String.join(" or ", EXITS));
        }
        for (Class<?> exit : exits) {
            Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
            exit.getMethod("setExitProcedure", procedure).invoke(null, handingBack(procedure));
        }
        try {
            mainOf("kafka.tools.StorageTool").invoke(null, (Object) toolArgs);
            return 0;
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof ExitCalled) {
                return ((ExitCalled) e.getCause()).status;
            }
            throw e.getCause();
        } finally {
            for (Class<?> exit : exits) {
                exit.getMethod("resetExitProcedure").invoke(null);
            }
        }
    }

    /** An exit procedure that throws the status back to {@link #format} instead of ending the JVM. */
    private static Object handingBack(Class<?> procedure) {
        return Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, margs) -> {
                switch (method.getName()) {
                    case "execute":
                        throw new ExitCalled((Integer) margs[0]);
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    case "equals":
                        return proxy == margs[0];
                    default:
                        return "TestbedKafkaStart exit procedure";
                }
            });
    }

    private static Method mainOf(String className) throws ReflectiveOperationException {
        return Class.forName(className).getMethod("main", String[].class);
    }
}
