// A Java member's consumer settings checked by its own kafka-clients, without connecting (testbed.members.preflight).
//
// Arguments: <properties file> <consumer|share> <the spec's client_config keys, comma-separated>
//            <keys the member's assignors read, comma-separated>
// Prints one JSON line: {"errors": [{"key": <a client_config key, or null>, "message": <kafka-clients' own>}]}.
//
// A key kafka-clients does not know is only logged by a KafkaConsumer ("were supplied but are not used yet"), so
// each client_config key must be one of ConsumerConfig.configNames() (or one the listed assignors read). Then the
// settings are parsed as the consumer parses them: new ConsumerConfig(props), or the share consumer's
// ShareConsumerConfig (package-private in 4.1, hence reflection), which refuses consumer-group settings. A
// ConfigException names one setting at a time: the check takes that key out and parses again, so every bad key is
// reported. A message that names no client_config key is put on the key whose removal makes it go away.
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

public class ConsumerConfigCheck {
    static final String SHARE_CONFIG = "org.apache.kafka.clients.consumer.ShareConsumerConfig";

    static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static List<String> keys(String arg) {
        return arg.isEmpty() ? new ArrayList<>() : new ArrayList<>(Arrays.asList(arg.split(",")));
    }

    /** The message of the first problem kafka-clients finds in these settings; null when it takes them. */
    static String parse(Properties props, boolean share) {
        try {
            if (share) {
                Constructor<?> c = Class.forName(SHARE_CONFIG).getDeclaredConstructor(Properties.class);
                c.setAccessible(true);
                c.newInstance(props);
            } else {
                new ConsumerConfig(props);
            }
            return null;
        } catch (InvocationTargetException e) {
            return describe(e.getCause());
        } catch (ReflectiveOperationException e) {  // a kafka-clients without ShareConsumerConfig: the consumer's
            return parse(props, false);
        } catch (RuntimeException e) {
            return describe(e);
        }
    }

    static String describe(Throwable e) {
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** The longest client_config key the message names, if any. */
    static String named(String message, Set<String> keys) {
        String best = null;
        for (String key : keys) {
            if (message.contains(key) && (best == null || key.length() > best.length())) best = key;
        }
        return best;
    }

    /** The client_config key without which this message goes away, if one does. */
    static String culprit(Properties props, boolean share, Set<String> keys, String message) {
        for (String key : keys) {
            Properties without = (Properties) props.clone();
            without.remove(key);
            if (!Objects.equals(parse(without, share), message)) return key;
        }
        return null;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = Files.newInputStream(Paths.get(args[0]))) {
            props.load(in);  // as VerifiableConsumer's Utils.loadProps reads its --consumer.config
        }
        boolean share = args[1].equals("share");
        Set<String> candidates = new LinkedHashSet<>(keys(args[2]));
        Set<String> readByAssignors = new HashSet<>(keys(args[3]));
        // the runners construct their consumers with deserializer instances
        props.putIfAbsent(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.putIfAbsent(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        List<String> errors = new ArrayList<>();
        Set<String> known = ConsumerConfig.configNames();
        for (String key : new ArrayList<>(candidates)) {
            if (!known.contains(key) && !readByAssignors.contains(key)) {
                errors.add(error(key, String.format("Unknown configuration '%s' (not a consumer setting of "
                        + "kafka-clients %s)", key, AppInfoParser.getVersion())));
                props.remove(key);
                candidates.remove(key);
            }
        }
        for (int round = 0, rounds = candidates.size(); round <= rounds; round++) {
            String message = parse(props, share);
            if (message == null) break;
            String key = named(message, candidates);
            if (key == null) key = culprit(props, share, candidates, message);
            errors.add(error(key, message));
            if (key == null) break;  // testbed's own settings and the spec's fields: nothing more to learn
            props.remove(key);
            candidates.remove(key);
        }
        System.out.println("{\"errors\":[" + String.join(",", errors) + "]}");
    }

    static String error(String key, String message) {
        return "{\"key\":" + quote(key) + ",\"message\":" + quote(message) + "}";
    }
}
