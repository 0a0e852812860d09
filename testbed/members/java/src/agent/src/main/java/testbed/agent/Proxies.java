package testbed.agent;

import java.lang.reflect.Method;

/** What the agent's proxies (listeners and callbacks around the program's) answer for java.lang.Object's methods. */
final class Proxies {
    private Proxies() {}

    /** Whether {@code method} is one of Object's (the proxy answers it with {@link #objectMethod}). */
    static boolean isObjectMethod(Method method) {
        return method.getDeclaringClass() == Object.class;
    }

    /** equals: identity; hashCode: identity's; toString: what the proxy is, around the program's object. */
    static Object objectMethod(Object proxy, Method method, Object[] args, String what, Object user) {
        switch (method.getName()) {
            case "equals": return proxy == args[0];
            case "hashCode": return System.identityHashCode(proxy);
            default: return "testbed-agent " + what + " around " + user;
        }
    }
}
