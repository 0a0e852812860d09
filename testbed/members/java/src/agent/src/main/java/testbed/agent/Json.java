package testbed.agent;

import java.util.Collection;
import java.util.Map;

/** The JSON the history needs, written by hand: the agent carries no library a program might also have. */
final class Json {
    private Json() {}

    static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    static String quote(String s) {
        StringBuilder out = new StringBuilder(s.length() + 2);
        string(out, s);
        return out.toString();
    }

    /** Any value a setting may hold: numbers, booleans and strings as they are, lists and maps element by element,
     * classes by name, anything else as its toString. */
    static void value(StringBuilder out, Object v) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short
                || v instanceof Byte) {
            out.append(v);
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isFinite(d)) {
                out.append(v);
            } else {
                string(out, v.toString());
            }
        } else if (v instanceof Class) {
            string(out, ((Class<?>) v).getName());
        } else if (v instanceof Collection) {
            out.append('[');
            boolean first = true;
            for (Object e : (Collection<?>) v) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                value(out, e);
            }
            out.append(']');
        } else if (v instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(out, String.valueOf(e.getKey()));
                out.append(':');
                value(out, e.getValue());
            }
            out.append('}');
        } else {
            string(out, v.toString());
        }
    }
}
