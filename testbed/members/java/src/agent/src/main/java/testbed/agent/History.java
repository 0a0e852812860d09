package testbed.agent;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The member's history file: one JSON line per event, as testbed.instrument.history writes it for Python programs
 * (ts_ms, mono_ms, source, then the event model's fields in order). One write per call on a file opened for append,
 * so a SIGKILL loses at most the write under way; opened at the first event. */
final class History {
    final String path;
    private final String sourceJson;
    private FileOutputStream out;

    History(String path, String source) {
        this.path = path;
        this.sourceJson = Json.quote(source);
    }

    static long wallMs() {
        return System.currentTimeMillis();
    }

    /** CLOCK_MONOTONIC in ms on Linux, the clock the harness's time.monotonic reads. */
    static long monoMs() {
        return System.nanoTime() / 1_000_000L;
    }

    /** The start of an event's line up to its name: {"ts_ms":..,"mono_ms":..,"source":..,"name":"..." */
    StringBuilder begin(String name, long tsMs, long monoMs) {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"ts_ms\":").append(tsMs).append(",\"mono_ms\":").append(monoMs).append(",\"source\":")
                .append(sourceJson).append(",\"name\":\"").append(name).append('"');
        return b;
    }

    StringBuilder begin(String name) {
        return begin(name, wallMs(), monoMs());
    }

    synchronized void write(CharSequence lines) throws IOException {
        if (out == null) {
            File f = new File(path);
            File dir = f.getAbsoluteFile().getParentFile();
            if (dir != null) {
                dir.mkdirs();
            }
            out = new FileOutputStream(f, true);
        }
        out.write(lines.toString().getBytes(StandardCharsets.UTF_8));
    }

    void line(StringBuilder b) throws IOException {
        b.append("}\n");
        write(b);
    }

    // ---- events ---------------------------------------------------------------------------------

    void partitions(String kind, List<String> topics, List<Integer> partitions, Integer generation,
                    Integer memberEpoch, String kafkaMemberId) throws IOException {
        if (topics.isEmpty() && !kind.equals("assigned")) {
            return; // no ownership ends with an empty revoke (an eager client's first join)
        }
        StringBuilder b = new StringBuilder(256);
        // the partitions' model puts partitions, generation, member_epoch before name
        b.append("{\"ts_ms\":").append(wallMs()).append(",\"mono_ms\":").append(monoMs()).append(",\"source\":")
                .append(sourceJson).append(",\"partitions\":[");
        for (int i = 0; i < topics.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append('[');
            Json.string(b, topics.get(i));
            b.append(',').append(partitions.get(i)).append(']');
        }
        b.append("],\"generation\":").append(generation).append(",\"member_epoch\":").append(memberEpoch)
                .append(",\"name\":\"").append(kind).append("\",\"kafka_member_id\":");
        Json.value(b, kafkaMemberId);
        line(b);
    }

    void committed(Offsets offsets, String trigger, String error) throws IOException {
        StringBuilder b = begin("committed");
        b.append(",\"offsets\":[");
        for (int i = 0; i < offsets.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append("{\"topic\":");
            Json.string(b, offsets.topics.get(i));
            b.append(",\"partition\":").append(offsets.partitions.get(i)).append(",\"offset\":")
                    .append(offsets.offsets.get(i)).append('}');
        }
        b.append("],\"trigger\":\"").append(trigger).append("\",\"error\":");
        Json.value(b, error);
        line(b);
    }

    void error(String code, String message, boolean fatal) throws IOException {
        StringBuilder b = begin("error");
        b.append(",\"code\":");
        Json.string(b, code);
        b.append(",\"message\":");
        Json.string(b, message == null ? "" : message);
        b.append(",\"fatal\":").append(fatal);
        line(b);
    }

    void stopped(String reason) throws IOException {
        StringBuilder b = begin("stopped");
        b.append(",\"reason\":");
        Json.string(b, reason);
        line(b);
    }
}
