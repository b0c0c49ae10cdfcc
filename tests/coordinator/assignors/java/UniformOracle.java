// kgroup test oracle (our own code, not Kafka's): the homogeneous uniform assignment and the range assignment
// computed with the JDK's own HashMap/HashSet, to check that kgroup's emulation of Java iteration order makes the
// same decisions. The steps follow the rules stated in coordinator/assignors/uniform.py and range.py.
//
// Input, one case per block, tokens separated by spaces:
//   CASE <uniform|range>
//   T <msb> <lsb> <partitions>                      topics, numbered from 0 in input order
//   M <member-id-hex> <instance-hex|-> <t,t,...|-> <t:p.p.p/t:p|->   members in memberSpecs insertion order;
//                                                     subscriptions by topic number; the previous target record
//   END
// Output per case: one line per member in HashMap order, "<member-hex> t:p,p,p;t:p", then "END".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public class UniformOracle {
    static final class Id implements Comparable<Id> {
        final long msb, lsb; final int no;
        Id(long msb, long lsb, int no) { this.msb = msb; this.lsb = lsb; this.no = no; }
        @Override public int hashCode() { long x = msb ^ lsb; return (int) (x >> 32) ^ (int) x; }
        @Override public boolean equals(Object o) { return o instanceof Id && ((Id) o).msb == msb && ((Id) o).lsb == lsb; }
        @Override public int compareTo(Id o) { int c = Long.compare(msb, o.msb); return c != 0 ? c : Long.compare(lsb, o.lsb); }
    }

    static final class Member {
        String instance;
        List<Id> subs = new ArrayList<>();
        Map<Id, Set<Integer>> record;   // unmodifiable, rebuilt like a replayed target-assignment record
    }

    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) b.append(String.format("%04x", (int) s.charAt(i)));
        return b.toString();
    }

    static String unhex(String h) {
        char[] cs = new char[h.length() / 4];
        for (int i = 0; i < cs.length; i++) cs[i] = (char) Integer.parseInt(h.substring(4 * i, 4 * i + 4), 16);
        return new String(cs);
    }

    static Map<Id, Set<Integer>> copyOf(Map<Id, Set<Integer>> m) {
        Map<Id, Set<Integer>> c = new HashMap<>(m.size());
        for (Map.Entry<Id, Set<Integer>> e : m.entrySet()) c.put(e.getKey(), new HashSet<>(e.getValue()));
        return c;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        StringBuilder out = new StringBuilder();
        String line, kind = null;
        List<Id> topics = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        Map<String, Member> members = new HashMap<>();
        while ((line = in.readLine()) != null) {
            String[] t = line.trim().split(" ");
            switch (t[0]) {
                case "CASE": kind = t[1]; topics.clear(); counts.clear(); members = new HashMap<>(); break;
                case "T": topics.add(new Id(Long.parseLong(t[1]), Long.parseLong(t[2]), topics.size()));
                          counts.add(Integer.parseInt(t[3])); break;
                case "M": {
                    Member m = new Member();
                    m.instance = t[2].equals("-") ? null : unhex(t[2]);
                    if (!t[3].equals("-")) for (String s : t[3].split(",")) m.subs.add(topics.get(Integer.parseInt(s)));
                    Map<Id, Set<Integer>> rec = new HashMap<>();
                    if (!t[4].equals("-")) for (String e : t[4].split("/")) {
                        String[] kv = e.split(":");
                        List<Integer> ps = new ArrayList<>();
                        if (kv.length > 1) for (String p : kv[1].split("\\.")) ps.add(Integer.parseInt(p));
                        rec.putIfAbsent(topics.get(Integer.parseInt(kv[0])), new HashSet<>(ps));
                    }
                    m.record = Collections.unmodifiableMap(rec);
                    members.put(unhex(t[1]), m);
                    break;
                }
                case "END": {
                    Map<String, Map<Id, Set<Integer>>> result = kind.equals("uniform")
                        ? homogeneous(topics, counts, members) : range(counts, members);
                    for (String id : members.keySet()) {
                        out.append(hex(id)).append(' ');
                        Map<Id, Set<Integer>> a = result.get(id);
                        if (a != null) for (Map.Entry<Id, Set<Integer>> e : a.entrySet()) {
                            out.append(e.getKey().no).append(':');
                            List<String> ps = new ArrayList<>();
                            for (int p : e.getValue()) ps.add(Integer.toString(p));
                            out.append(String.join(",", ps)).append(';');
                        }
                        out.append('\n');
                    }
                    out.append("END\n");
                    break;
                }
                default: throw new IllegalArgumentException(line);
            }
        }
        System.out.print(out);
    }

    static Map<String, Map<Id, Set<Integer>>> homogeneous(List<Id> topics, List<Integer> counts,
                                                          Map<String, Member> members) {
        Map<String, Map<Id, Set<Integer>>> target = new HashMap<>();
        if (members.isEmpty()) return target;
        Member first = members.values().iterator().next();
        Set<Id> subscribed = new HashSet<>(first.subs);
        if (subscribed.isEmpty()) return target;
        Set<Long> taken = new HashSet<>();
        for (Member m : members.values())
            for (Map.Entry<Id, Set<Integer>> e : m.record.entrySet())
                for (int p : e.getValue()) taken.add(((long) e.getKey().no << 32) | p);
        List<long[]> pool = new ArrayList<>();   // {topic number, partition}
        int total = 0;
        for (Id id : subscribed) {
            for (int p = 0; p < counts.get(id.no); p++)
                if (!taken.contains(((long) id.no << 32) | p)) pool.add(new long[] {id.no, p});
            total += counts.get(id.no);
        }
        int n = members.size(), base = total / n, extra = total % n, index = 0;
        Map<String, Boolean> mutable = new HashMap<>();
        List<String> needy = new ArrayList<>();
        List<Integer> needs = new ArrayList<>();
        for (Map.Entry<String, Member> me : members.entrySet()) {
            Map<Id, Set<Integer>> mine = me.getValue().record, changed = null;
            int quota = base;
            boolean withExtra = extra > 0;
            if (withExtra) quota++;
            for (Map.Entry<Id, Set<Integer>> e : mine.entrySet()) {
                if (!subscribed.contains(e.getKey())) {
                    if (changed == null) changed = copyOf(mine);
                    changed.remove(e.getKey());
                    continue;
                }
                if (e.getValue().size() <= quota) { quota -= e.getValue().size(); continue; }
                for (int p : e.getValue()) {
                    if (quota > 0) { quota--; continue; }
                    if (changed == null) changed = copyOf(mine);
                    Set<Integer> s = changed.get(e.getKey());
                    s.remove(p);
                    if (s.isEmpty()) changed.remove(e.getKey());
                    pool.add(new long[] {e.getKey().no, p});
                }
            }
            if (quota > 0 && withExtra && n - index > extra) { quota--; withExtra = false; }
            if (quota > 0) { needy.add(me.getKey()); needs.add(quota); }
            if (withExtra) extra--;
            target.put(me.getKey(), changed == null ? mine : changed);
            mutable.put(me.getKey(), changed != null);
            index++;
        }
        int next = 0;
        for (int i = 0; i < needy.size(); i++) {
            String id = needy.get(i);
            Map<Id, Set<Integer>> a = target.get(id);
            if (!mutable.get(id)) { a = copyOf(a); target.put(id, a); }
            for (int k = 0; k < needs.get(i) && next < pool.size(); k++, next++) {
                long[] tp = pool.get(next);
                a.computeIfAbsent(topics.get((int) tp[0]), x -> new HashSet<>()).add((int) tp[1]);
            }
        }
        if (next < pool.size()) throw new IllegalStateException("Partitions were left unassigned");
        return target;
    }

    static Map<String, Map<Id, Set<Integer>>> range(List<Integer> counts, Map<String, Member> members) {
        // Heterogeneous form (each topic split over its own subscribers); equal to the homogeneous one when all
        // members subscribe to the same topics, except for the map capacity, which the caller keeps in range.
        List<String> order = new ArrayList<>(members.keySet());
        order.sort((a, b) -> {
            String ia = members.get(a).instance, ib = members.get(b).instance;
            if (ia != null && ib != null) return ia.compareTo(ib);
            if (ia != null) return -1;
            if (ib != null) return 1;
            return a.compareTo(b);
        });
        Map<Id, int[]> state = new HashMap<>();   // {subscribers, next index}
        for (String id : order) for (Id t : members.get(id).subs) state.computeIfAbsent(t, x -> new int[2])[0]++;
        Map<String, Map<Id, Set<Integer>>> out = new HashMap<>();
        for (String id : order) {
            Member m = members.get(id);
            Map<Id, Set<Integer>> a = new HashMap<>((int) ((m.subs.size() / 0.75f) + 1));
            for (Id t : m.subs) {
                int[] s = state.get(t);
                int n = counts.get(t.no), q = n / s[0], r = n % s[0], k = s[1]++;
                int start = k * q + Math.min(k, r), end = start + q + (k < r ? 1 : 0);
                if (start < end) {
                    Set<Integer> ps = new java.util.TreeSet<>();
                    for (int p = start; p < end; p++) ps.add(p);
                    a.put(t, ps);
                }
            }
            out.put(id, a);
        }
        return out;
    }
}
