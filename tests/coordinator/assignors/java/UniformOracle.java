// kgroup test oracle (our own code, not Kafka's): the homogeneous uniform assignment and the range assignment
// computed with the JDK's own HashMap/HashSet, to check that kgroup's emulation of Java iteration order makes the
// same decisions. The steps follow the rules stated in coordinator/assignors/uniform.py and range.py.
//
// Input, one case per block, tokens separated by spaces:
//   CASE <uniform|hetero|range>          uniform = the homogeneous builder, hetero = the heterogeneous one
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
                        ? homogeneous(topics, counts, members)
                        : kind.equals("hetero") ? new Hetero(topics, counts, members).run() : range(counts, members);
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

    /** The heterogeneous uniform builder, with int[] owners and a sorted-members balancer. */
    static final class Hetero {
        final List<Id> topics; final List<Integer> counts;
        final List<String> ids; final List<Member> ms = new ArrayList<>();
        final Map<Id, List<Integer>> subscribers = new HashMap<>();
        final Map<Id, int[]> owners = new HashMap<>();
        final List<Map<Id, Set<Integer>>> target = new ArrayList<>();
        final List<Boolean> mutable = new ArrayList<>();
        int[] load;

        Hetero(List<Id> topics, List<Integer> counts, Map<String, Member> members) {
            this.topics = topics; this.counts = counts;
            ids = new ArrayList<>(members.keySet());
            for (String id : ids) ms.add(members.get(id));
            for (int i = 0; i < ms.size(); i++)
                for (Id t : ms.get(i).subs) subscribers.computeIfAbsent(t, x -> new ArrayList<>()).add(i);
            load = new int[ms.size()];
            for (Id t : subscribers.keySet()) {
                int[] o = new int[counts.get(t.no)];
                java.util.Arrays.fill(o, -1);
                owners.put(t, o);
            }
        }

        int n(Id t) { return counts.get(t.no); }

        List<Id> sorted(java.util.Collection<Id> ts) {
            List<Id> l = new ArrayList<>(ts);
            l.sort((a, b) -> {
                int c = Double.compare((double) n(b) / subscribers.get(b).size(), (double) n(a) / subscribers.get(a).size());
                if (c == 0) c = Integer.compare(subscribers.get(a).size(), subscribers.get(b).size());
                return c != 0 ? c : a.compareTo(b);
            });
            return l;
        }

        Map<Id, Set<Integer>> writable(int i) {
            if (!mutable.get(i)) { target.set(i, copyOf(target.get(i))); mutable.set(i, true); }
            return target.get(i);
        }

        void move(Id t, int p, int to) {
            int from = owners.get(t)[p];
            if (from != -1) {
                Map<Id, Set<Integer>> a = writable(from);
                Set<Integer> s = a.get(t);
                if (s != null) { s.remove(p); if (s.isEmpty()) a.remove(t); }
                load[from]--;
            }
            int subs = subscribers.get(t).size(), est = (n(t) + subs - 1) / subs;
            writable(to).computeIfAbsent(t, x -> new HashSet<>((int) ((est / 0.75f) + 1))).add(p);
            owners.get(t)[p] = to;
            load[to]++;
        }

        // The balancer: members sorted by load then index; a least-loaded range growing right, a most-loaded
        // range growing left.
        List<Integer> order = new ArrayList<>();
        int llEnd, llLevel, llNext, mlStart, mlEnd, mlLevel, mlNext;

        int init(List<Integer> members) {
            order = new ArrayList<>(members);
            order.sort((a, b) -> load[a] != load[b] ? Integer.compare(load[a], load[b]) : Integer.compare(a, b));
            llEnd = 0; llLevel = load[order.get(0)] - 1; llNext = 0;
            mlStart = mlEnd = order.size(); mlLevel = load[order.get(order.size() - 1)] + 1; mlNext = order.size() - 1;
            return load[order.get(order.size() - 1)] - load[order.get(0)];
        }

        int least() {
            if (llNext >= llEnd) {
                llLevel++;
                while (llEnd < order.size() && load[order.get(llEnd)] == llLevel) llEnd++;
                llNext = 0;
            }
            return order.get(llNext++);
        }

        int most() {
            if (mlNext < mlStart) {
                if (mlEnd <= mlStart && mlStart > 0) mlLevel = load[order.get(mlStart - 1)]; else mlLevel--;
                while (mlStart > 0 && load[order.get(mlStart - 1)] == mlLevel) mlStart--;
                mlNext = mlEnd - 1;
            }
            return mlNext < 0 ? -1 : order.get(mlNext--);
        }

        void exclude() {
            int j = mlNext + 1, x = order.get(j);
            order.set(j, order.get(mlEnd - 1));
            order.set(mlEnd - 1, x);
            mlEnd--;
        }

        boolean balanced() { return mlLevel - llLevel <= 1; }

        Map<String, Map<Id, Set<Integer>>> run() {
            Map<String, Map<Id, Set<Integer>>> out = new HashMap<>();
            for (int i = 0; i < ms.size(); i++) {
                Map<Id, Set<Integer>> old = ms.get(i).record, changed = null;
                for (Map.Entry<Id, Set<Integer>> e : old.entrySet()) {
                    if (ms.get(i).subs.contains(e.getKey())) {
                        load[i] += e.getValue().size();
                        for (int p : e.getValue()) owners.get(e.getKey())[p] = i;
                    } else {
                        if (changed == null) changed = copyOf(old);
                        changed.remove(e.getKey());
                    }
                }
                target.add(changed == null ? old : changed);
                mutable.add(changed != null);
            }
            if (subscribers.isEmpty()) return out;
            Map<Id, List<Integer>> free = new HashMap<>();
            for (Map.Entry<Id, int[]> e : owners.entrySet())
                for (int p = 0; p < e.getValue().length; p++)
                    if (e.getValue()[p] == -1) free.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(p);
            for (Id t : sorted(free.keySet())) {
                init(subscribers.get(t));
                for (int p : free.get(t)) move(t, p, least());
            }
            List<Id> movable = new ArrayList<>();
            for (Id t : subscribers.keySet()) if (subscribers.get(t).size() >= 2) movable.add(t);
            List<Id> ts = sorted(movable);
            int last = -1;
            outer:
            for (int round = 0; round < 16; round++) {
                for (int k = 0; k < ts.size(); k++) {
                    if (k == last) break outer;
                    int moved = balance(ts.get(k));
                    if (moved > 0 || last == -1) last = k;
                }
            }
            for (int i = 0; i < ids.size(); i++) out.put(ids.get(i), target.get(i));
            return out;
        }

        int balance(Id t) {
            if (init(subscribers.get(t)) <= 1) return 0;
            int[] own = owners.get(t);
            List<Integer> parts = new ArrayList<>();
            for (int p = 0; p < own.length; p++) parts.add(p);
            parts.sort((a, b) -> own[a] != own[b] ? Integer.compare(own[a], own[b]) : Integer.compare(a, b));
            Map<Integer, Integer> start = new HashMap<>(), end = new HashMap<>();
            for (int k = 0; k < parts.size(); k++) { start.putIfAbsent(own[parts.get(k)], k); end.put(own[parts.get(k)], k + 1); }
            int moved = 0;
            while (!balanced()) {
                int m;
                while ((m = most()) != -1 && (!end.containsKey(m) || end.get(m) - start.get(m) <= 0)) exclude();
                if (m == -1) break;
                int p = parts.get(end.get(m) - 1);
                end.put(m, end.get(m) - 1);
                int to = least();
                if (balanced()) break;
                move(t, p, to);
                moved++;
            }
            return moved;
        }
    }
}
