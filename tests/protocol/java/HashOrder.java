// kgroup test oracle (our own code): prints what the JDK does, for tests/protocol/test_java_semantics.py.
// Reads one request per line on stdin, answers one line per request on stdout:
//   HASH S <utf16-hex>           String.hashCode
//   HASH U <msb>:<lsb>           java.util.UUID.hashCode (the same fold as Kafka's Uuid.hashCode)
//   SORT <utf16-hex> ...         the strings sorted by String.compareTo
//   M <type> <op> ...            a HashMap/HashSet built by the ops; answers its keys in iteration order
// Key types: S string (UTF-16 units in hex), I int, U Kafka-like Uuid msb:lsb (Comparable, signed compare),
// O opaque id:hash (not Comparable). Ops: D new HashMap<>(), N<n> new HashMap<>(n), E new HashSet<>(),
// C new HashMap<>(map), H new HashSet<>(current keys), L<k,k,...> new HashSet<>(List.of(...) in this order),
// +k put/add, -k remove, ^k computeIfAbsent.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;

public class HashOrder {
    static final class KUuid implements Comparable<KUuid> {
        final long msb, lsb;
        KUuid(long msb, long lsb) { this.msb = msb; this.lsb = lsb; }
        @Override public int hashCode() { long x = msb ^ lsb; return (int) (x >> 32) ^ (int) x; }
        @Override public boolean equals(Object o) {
            return o instanceof KUuid && ((KUuid) o).msb == msb && ((KUuid) o).lsb == lsb;
        }
        @Override public int compareTo(KUuid o) {
            int c = Long.compare(msb, o.msb);
            return c != 0 ? c : Long.compare(lsb, o.lsb);
        }
        @Override public String toString() { return msb + ":" + lsb; }
    }

    static final class Opaque {
        final int id, h;
        Opaque(int id, int h) { this.id = id; this.h = h; }
        @Override public int hashCode() { return h; }
        @Override public boolean equals(Object o) { return o instanceof Opaque && ((Opaque) o).id == id; }
        @Override public String toString() { return id + ":" + h; }
    }

    static String decodeHex(String hex) {
        char[] cs = new char[hex.length() / 4];
        for (int i = 0; i < cs.length; i++) cs[i] = (char) Integer.parseInt(hex.substring(4 * i, 4 * i + 4), 16);
        return new String(cs);
    }

    static String encodeHex(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) b.append(String.format("%04x", (int) s.charAt(i)));
        return b.toString();
    }

    static Object key(char type, String tok) {
        switch (type) {
            case 'S': return decodeHex(tok);
            case 'I': return Integer.valueOf(tok);
            case 'U': { String[] p = tok.split(":"); return new KUuid(Long.parseLong(p[0]), Long.parseLong(p[1])); }
            case 'O': { String[] p = tok.split(":"); return new Opaque(Integer.parseInt(p[0]), Integer.parseInt(p[1])); }
            default: throw new IllegalArgumentException("key type " + type);
        }
    }

    static String show(char type, Object k) {
        return type == 'S' ? encodeHex((String) k) : k.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] t = line.trim().split(" ");
            if (t[0].equals("HASH")) {
                if (t[1].equals("S")) out.append(decodeHex(t.length > 2 ? t[2] : "").hashCode());
                else {
                    String[] p = t[2].split(":");
                    out.append(new UUID(Long.parseLong(p[0]), Long.parseLong(p[1])).hashCode());
                }
            } else if (t[0].equals("SORT")) {
                List<String> l = new ArrayList<>();
                for (int i = 1; i < t.length; i++) l.add(decodeHex(t[i]));
                Collections.sort(l);
                for (String s : l) out.append(encodeHex(s)).append(' ');
            } else {
                char type = t[1].charAt(0);
                Map<Object, Object> map = null;
                HashSet<Object> set = null;
                for (int i = 2; i < t.length; i++) {
                    char c = t[i].charAt(0);
                    String rest = t[i].substring(1);
                    switch (c) {
                        case 'D': map = new HashMap<>(); set = null; break;
                        case 'N': map = new HashMap<>(Integer.parseInt(rest)); set = null; break;
                        case 'E': set = new HashSet<>(); map = null; break;
                        case 'C': map = new HashMap<>(map); break;
                        case 'H': {
                            Collection<Object> from = map != null ? map.keySet() : set;
                            set = new HashSet<>(from);
                            map = null;
                            break;
                        }
                        case 'L': {
                            List<Object> l = new ArrayList<>();
                            if (!rest.isEmpty()) for (String k : rest.split(",")) l.add(key(type, k));
                            set = new HashSet<>(l);
                            map = null;
                            break;
                        }
                        case '+': if (map != null) map.put(key(type, rest), Boolean.TRUE); else set.add(key(type, rest)); break;
                        case '-': if (map != null) map.remove(key(type, rest)); else set.remove(key(type, rest)); break;
                        case '^': map.computeIfAbsent(key(type, rest), x -> Boolean.TRUE); break;
                        default: throw new IllegalArgumentException("op " + t[i]);
                    }
                }
                for (Object k : (map != null ? map.keySet() : set)) out.append(show(type, k)).append(' ');
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
