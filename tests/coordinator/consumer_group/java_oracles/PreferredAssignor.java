import java.io.*;
import java.util.*;

// Kafka 4.4 ConsumerGroup.computePreferredServerAssignor's counting, on the JDK running it: a java.util.HashMap
// copied from the group's counts (given in the group's TimelineHashMap order), then Map.compute with
// Utils.decValue for the old member's assignor and Utils.incValue for the new one's, then the first maximum
// (Stream.max with Map.Entry.comparingByValue). Input lines: "<name>=<count>,... | <old or -> | <new or ->".
public class PreferredAssignor {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\\|", -1);
            LinkedHashMap<String, Integer> base = new LinkedHashMap<>();
            for (String kv : parts[0].trim().split(",")) {
                if (kv.isEmpty()) continue;
                String[] p = kv.split("=");
                base.put(p[0], Integer.parseInt(p[1]));
            }
            Map<String, Integer> counts = new HashMap<>(base);
            String oldName = parts[1].trim(), newName = parts[2].trim();
            if (!oldName.equals("-")) counts.compute(oldName, (k, v) -> v == null ? null : (v == 1 ? null : v - 1));
            if (!newName.equals("-")) counts.compute(newName, (k, v) -> v == null ? 1 : v + 1);
            Optional<String> best = counts.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey);
            System.out.println(best.orElse("-"));
        }
    }
}
