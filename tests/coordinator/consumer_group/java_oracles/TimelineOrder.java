import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;
import java.io.*;

// Reads operations ("put k" / "remove k" / "snapshot e") from stdin, one per line; after each "print" line writes
// the TimelineHashMap's iteration order (keys joined by a tab). Kafka 4.4's own timeline classes, unmodified.
public class TimelineOrder {
    public static void main(String[] args) throws IOException {
        SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
        TimelineHashMap<String, Integer> map = new TimelineHashMap<>(registry, 0);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        int v = 0;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("put ")) map.put(line.substring(4), v++);
            else if (line.startsWith("remove ")) map.remove(line.substring(7));
            else if (line.startsWith("snapshot ")) registry.idempotentCreateSnapshot(Long.parseLong(line.substring(9)));
            else if (line.equals("print")) out.println(String.join("\t", map.keySet()));
        }
    }
}
