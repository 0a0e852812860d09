package testbed.agent;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

/** Which member this JVM is and where its history goes: a properties file named by TESTBED_INSTRUMENT_AGENT (or the
 * agent's argument), written by testbed.members.java.agent. Without one the agent records nothing. */
final class AgentConfig {
    static final String ENV = "TESTBED_INSTRUMENT_AGENT";

    final String memberId;
    final String historyPath;
    final String spec; // null outside a scenario
    final String commandJson; // the member's command line as a JSON array, or null

    private AgentConfig(String memberId, String historyPath, String spec, String commandJson) {
        this.memberId = memberId;
        this.historyPath = historyPath;
        this.spec = spec;
        this.commandJson = commandJson;
    }

    static AgentConfig load(String agentArgs) throws IOException {
        String path = System.getenv(ENV);
        if (path == null || path.isEmpty()) {
            path = agentArgs;
        }
        if (path == null || path.isEmpty()) {
            return null;
        }
        Properties p = new Properties();
        try (InputStream in = new FileInputStream(path)) {
            p.load(new InputStreamReader(in, StandardCharsets.UTF_8));
        }
        String history = p.getProperty("history_path");
        if (history == null || history.isEmpty()) {
            throw new IOException(path + ": no history_path");
        }
        String member = p.getProperty("member_id");
        if (member == null || member.isEmpty()) {
            member = "program-" + ProcessHandle.current().pid();
        }
        return new AgentConfig(member, history, p.getProperty("spec"), p.getProperty("command_json"));
    }
}
