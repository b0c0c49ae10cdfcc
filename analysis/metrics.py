"""Rebalance metrics from event records, with Spark DataFrames (definitions: docs/analysis.md).

Input: the DataFrame of ``analysis.load`` (``run``, ``scenario``, ``seed`` + the event schema). Output tables:

* ``rebalances`` -- one row per rebalance (an *episode*): from the first ``RebalanceStarted`` after the group was
  last Stable/Empty to the ``GroupMetadata`` that makes it Stable again (or the ``JoinCompleted`` with no members
  that makes it Empty; ``end_ms`` null if the log ends first). A join phase that restarts (a second
  ``RebalanceStarted`` before Stable) stays in the same episode (``join_phases`` > 1).
* ``members`` -- per member id: lifetime, time without partitions, rebalances joined, session expiries.
* ``partitions`` -- per partition: time unowned (from the group's first rebalance to the end of the log).
* ``assignors`` -- the comparison per (scenario, assignor).
* ``intervals`` -- partition ownership intervals (partition, member, from, to) and ``member_intervals`` (member,
  generation, partition count, from, to): the charts' input.

Ownership is derived from the coordinator's records (there is no consumer-side record in schema v1): a member
owns its generation-N assignment from its SyncGroup response (the later of the Stable ``GroupMetadata`` and its own
``SyncReceived``) until, with the eager protocol, it revokes on rejoining (its next ``MemberRejoined``) or leaves
(``MemberRemoved``, ``StaticMemberReplaced``); with the cooperative protocol (selected assignor
``cooperative-sticky``) until its next SyncGroup response. The end of a run is its last record's timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.assignment import partitions_expr
from analysis.schema import group_member_schema

JOIN_TYPES = ("MemberJoined", "MemberRejoined", "StaticMemberReplaced")
COOPERATIVE_ASSIGNORS = ("cooperative-sticky",)

#: Trigger classes from RebalanceStarted.reason (the coordinator's reason strings, coordinator/classic_manager.py).
TRIGGERS = (
    ("session-expired", "%heartbeat expiration%"),
    ("sync-expired", "%pending sync%"),
    ("member-left", "%LeaveGroup%"),
    ("static-member-replaced", "%static member%"),
    ("coordinator-loaded", "Freshly-loaded%"),
    ("member-joined", "Adding new member%"),
    ("member-rejoined", "%joining group during%"),
    ("member-rejoined", "%re-joining group during%"),
    ("member-rejoined", "%change of protocol%"),
    ("member-not-rejoined", "%did not rejoin%"),
)


@dataclass
class Tables:
    rebalances: object
    members: object
    partitions: object
    assignors: object
    intervals: object
    member_intervals: object

    def as_dict(self) -> dict:
        return {"rebalances": self.rebalances, "members": self.members, "partitions": self.partitions,
                "assignors": self.assignors, "intervals": self.intervals,
                "member_intervals": self.member_intervals}


def _F():
    from pyspark.sql import functions as F
    return F


def _W():
    from pyspark.sql import Window
    return Window


def trigger_col(reason):
    F = _F()
    expr = None
    for name, pattern in TRIGGERS:
        cond = reason.like(pattern)
        expr = F.when(cond, name) if expr is None else expr.when(cond, name)
    return F.when(reason.isNull(), None).otherwise(expr.otherwise("other"))


def flatten(events, cache: bool = False):
    """Group-scoped records (offset commits dropped: no rebalance metric reads them) as flat columns, plus
    ``run_end_ms`` per run (its last record's timestamp, offset commits included). With ``cache`` the JSON is
    parsed once: the projection is cached and both outputs read it."""
    F = _F()
    d = F.col("data")
    proj = events.select(
        "run", "scenario", "seed",
        d.group_id.alias("group_id"),
        F.col("timestamp_ms").alias("ts"), F.col("log_partition").alias("lp"),
        F.col("log_offset").alias("lo"), "type",
        d.member_id.alias("member_id"), d.group_instance_id.alias("group_instance_id"),
        d.client_id.alias("client_id"), d.old_member_id.alias("old_member_id"),
        d.new_member_id.alias("new_member_id"), d.generation_id.alias("generation_id"),
        d.reason.alias("reason"), d.initial.alias("initial"), d.members.alias("members"),
        d.protocol_name.alias("protocol_name"))
    if cache:
        proj = proj.cache()
    ends = proj.groupBy("run").agg(F.max("ts").alias("run_end_ms"))
    flat = (proj.where(~F.col("type").isin("OffsetCommit", "OffsetTombstone"))
            .where(F.col("group_id").isNotNull() & (F.col("group_id") != "")))
    return flat, ends


def group_members(flat):
    """Every member of every ``GroupMetadata`` with members, its assignment decoded (natively)."""
    F = _F()
    gm = (flat.where((F.col("type") == "GroupMetadata") & (F.size("members") > 0))
          .select("run", "group_id", "ts", "lp", "lo", "generation_id", "protocol_name",
                  F.posexplode("members").alias("pos", "m"))
          .withColumn("m", F.from_json("m", group_member_schema()))
          .select("run", "group_id", "ts", "lp", "lo", "generation_id", "protocol_name", "pos",
                  F.col("m.member_id").alias("member_id"), F.col("m.group_instance_id").alias("group_instance_id"),
                  F.col("m.client_id").alias("client_id"),
                  F.expr(partitions_expr("m.assignment.hex")).alias("tps")))
    return (gm.withColumn("owner", F.coalesce("group_instance_id", "member_id"))
            .withColumn("n_partitions", F.size("tps")))


def rebalances(flat, gm, cache: bool = False):
    """One row per rebalance episode (see the module docstring)."""
    F = _F()
    W = _W()
    w = W.partitionBy("run", "group_id").orderBy("ts", "lp", "lo")
    wprev = w.rowsBetween(W.unboundedPreceding, -1)
    stable_gm = (F.col("type") == "GroupMetadata") & (F.size("members") > 0)
    prev_stable_gen = F.max(F.when(stable_gm, F.col("generation_id"))).over(wprev)
    is_end = ((stable_gm & (F.col("generation_id") > F.coalesce(prev_stable_gen, F.lit(-1))))
              | ((F.col("type") == "JoinCompleted") & (F.size("members") == 0))
              | (F.col("type") == "GroupTombstone"))
    x = flat.withColumn("is_end", is_end)
    x = x.withColumn("seg", F.coalesce(F.sum(F.col("is_end").cast("int")).over(wprev), F.lit(0)))
    seg_w = W.partitionBy("run", "group_id", "seg")
    x = x.withColumn("seg_start", F.min(F.when(F.col("type") == "RebalanceStarted", F.col("ts"))).over(seg_w))
    rs = F.col("type") == "RebalanceStarted"
    jc = F.col("type") == "JoinCompleted"
    joins = F.col("type").isin(*JOIN_TYPES) & (F.col("ts") >= F.col("seg_start"))
    ep = (x.groupBy("run", "scenario", "seed", "group_id", "seg")
          .agg(F.min(F.when(rs, F.struct("ts", "lp", "lo", "reason", "initial"))).alias("first_rs"),
               F.sum(rs.cast("int")).alias("rebalance_starts"),
               F.sum(jc.cast("int")).alias("join_phases"),
               F.max(F.when(jc, F.struct("ts", "lp", "lo", "generation_id", "protocol_name", "members")))
               .alias("last_jc"),
               F.min(F.when(joins, F.col("ts"))).alias("first_join_ms"),
               F.max(F.when(F.col("is_end"), F.struct("ts", "lp", "lo", "type", "generation_id",
                                                       "protocol_name", "members"))).alias("end_rec"))
          .where(F.col("first_rs").isNotNull()))
    # (columns renamed: both sides derive from ``flat``, so ``syncs.run`` would be ambiguous after the join)
    syncs = (flat.where(F.col("type") == "SyncReceived")
             .groupBy("run", "group_id", "generation_id").agg(F.max("ts").alias("last_sync_ms"))
             .select(F.col("run").alias("_s_run"), F.col("group_id").alias("_s_group"),
                     F.col("generation_id").alias("_s_gen"), "last_sync_ms"))
    ep = (ep.join(syncs, (F.col("run") == F.col("_s_run")) & (F.col("group_id") == F.col("_s_group"))
                  & (F.col("end_rec.generation_id") == F.col("_s_gen"))
                  & (F.col("end_rec.type") == "GroupMetadata"), "left")
          .drop("_s_run", "_s_group", "_s_gen"))
    completed = F.col("end_rec.type") == "GroupMetadata"
    end_ms = F.when(completed, F.greatest(F.col("end_rec.ts"), F.coalesce("last_sync_ms", F.col("end_rec.ts")))) \
        .otherwise(F.col("end_rec.ts"))
    ep = ep.select(
        "run", "scenario", "seed", "group_id", "seg",
        F.coalesce(F.col("end_rec.generation_id"), F.col("last_jc.generation_id")).alias("generation_id"),
        F.col("first_rs.reason").alias("reason"), trigger_col(F.col("first_rs.reason")).alias("trigger"),
        F.col("first_rs.initial").alias("initial"),
        F.col("first_rs.ts").alias("start_ms"),
        F.coalesce("first_join_ms", F.col("first_rs.ts")).alias("stw_start_ms"),
        end_ms.alias("end_ms"),
        F.when(completed, "stable").when(F.col("end_rec.type") == "JoinCompleted", "empty")
         .when(F.col("end_rec.type") == "GroupTombstone", "deleted").otherwise("unfinished").alias("outcome"),
        "rebalance_starts", "join_phases",
        F.col("end_rec.lp").alias("_end_lp"), F.col("end_rec.lo").alias("_end_lo"),
        F.coalesce(F.col("end_rec.protocol_name"), F.col("last_jc.protocol_name")).alias("assignor"),
        F.when(completed, F.size("end_rec.members")).when(F.col("end_rec.type").isNotNull(), F.lit(0))
         .alias("members_after"),
        F.col("last_jc.members").alias("jc_members"),
    )
    ep = ep.withColumn("duration_ms", F.col("end_ms") - F.col("start_ms")) \
           .withColumn("stw_ms", F.col("end_ms") - F.col("stw_start_ms"))

    # the new assignment of each completed episode: the end GroupMetadata's members
    new = (gm.select("run", "group_id", F.col("lp").alias("_end_lp"), F.col("lo").alias("_end_lo"),
                     "owner", "n_partitions", "tps"))
    per_ep = (new.groupBy("run", "group_id", "_end_lp", "_end_lo")
              .agg(F.max("n_partitions").alias("_max"), F.min("n_partitions").alias("_min"),
                   F.sum("n_partitions").alias("partitions_after")))
    ep = ep.join(per_ep, ["run", "group_id", "_end_lp", "_end_lo"], "left")
    ep = ep.withColumn("balance", F.col("_max") - F.col("_min")).drop("_max", "_min")
    ep = ep.withColumn("partitions_after", F.when(F.col("outcome") == "empty", F.lit(0))
                       .otherwise(F.col("partitions_after")))

    ep = ep.cache() if cache else ep
    epw = W.partitionBy("run", "group_id").orderBy("start_ms", "seg")
    ep = ep.withColumn("rebalance_no", F.row_number().over(epw))
    prevw = epw.rowsBetween(W.unboundedPreceding, -1)
    ep = ep.withColumn("members_before",
                       F.coalesce(F.last("members_after", ignorenulls=True).over(prevw), F.lit(0)))
    ep = ep.withColumn("partitions_before",
                       F.coalesce(F.last("partitions_after", ignorenulls=True).over(prevw), F.lit(0)))

    # partition owners per completed episode, and the previous completed episode's owners
    owners = (ep.where(F.col("outcome").isin("stable", "empty"))
              .select("run", "group_id", "rebalance_no", "_end_lp", "_end_lo")
              .join(new, ["run", "group_id", "_end_lp", "_end_lo"], "left")
              .select("run", "group_id", "rebalance_no", "owner", F.explode_outer("tps").alias("tp"))
              .select("run", "group_id", "rebalance_no", "owner", F.col("tp.topic").alias("topic"),
                      F.col("tp.partition").alias("partition"))
              .where(F.col("topic").isNotNull()))
    kw = W.partitionBy("run", "group_id").orderBy("rebalance_no")
    done = (ep.where(F.col("outcome").isin("stable", "empty")).select("run", "group_id", "rebalance_no")
            .withColumn("k", F.row_number().over(kw)))
    done = done.cache() if cache else done
    cur = owners.join(done, ["run", "group_id", "rebalance_no"]).select(
        "run", "group_id", "k", "topic", "partition", F.col("owner").alias("new_owner"))
    prev = owners.join(done, ["run", "group_id", "rebalance_no"]).select(
        "run", "group_id", (F.col("k") + 1).alias("k"), "topic", "partition", F.col("owner").alias("old_owner"))
    pw = W.partitionBy("run", "group_id", "topic", "partition").orderBy("k")
    cur = cur.withColumn("last_owner", F.lag("new_owner").over(pw))
    diff = (cur.join(prev, ["run", "group_id", "k", "topic", "partition"], "full_outer")
            .groupBy("run", "group_id", "k")
            .agg(F.sum((F.col("old_owner").isNotNull()
                        & ~F.col("old_owner").eqNullSafe(F.col("new_owner"))).cast("int")).alias("lost"),
                 F.sum((F.col("new_owner").isNotNull()
                        & ~F.col("new_owner").eqNullSafe(F.col("old_owner"))).cast("int")).alias("gained"),
                 F.sum((F.col("new_owner").isNotNull() & F.col("last_owner").isNotNull()
                        & (F.col("new_owner") != F.col("last_owner"))).cast("int")).alias("moved")))
    diff = diff.join(done, ["run", "group_id", "k"]).drop("k")
    ep = ep.cache() if cache else ep
    ep = ep.join(diff, ["run", "group_id", "rebalance_no"], "left")
    coop = F.coalesce(F.col("assignor"), F.lit("")).isin(*COOPERATIVE_ASSIGNORS)
    finished = F.col("outcome").isin("stable", "empty")
    ep = ep.select(
        "run", "scenario", "seed", "group_id", "rebalance_no", "generation_id", "trigger", "reason", "initial",
        "start_ms", "stw_start_ms", "end_ms", "duration_ms", "stw_ms", "outcome", "rebalance_starts",
        "join_phases", "members_before", "members_after", "partitions_before", "partitions_after",
        F.when(~finished, None).when(coop, F.coalesce("lost", F.lit(0)))
         .otherwise(F.col("partitions_before")).cast("long").alias("partitions_revoked"),
        F.when(~finished, None).when(coop, F.coalesce("gained", F.lit(0)))
         .otherwise(F.coalesce("partitions_after", F.lit(0))).cast("long").alias("partitions_assigned"),
        F.when(finished, F.coalesce("moved", F.lit(0))).cast("long").alias("partitions_moved"),
        "balance", "assignor",
        F.when(coop, "cooperative").otherwise("eager").alias("protocol"),
        F.col("jc_members").alias("members"),
    )
    return ep


def ownership(flat, gm, ends):
    """Ownership intervals per (member, generation): ``from_ms`` (its SyncGroup response), ``to_ms``."""
    F = _F()
    W = _W()
    syncs = (flat.where(F.col("type") == "SyncReceived")
             .groupBy("run", "group_id", "generation_id", "member_id")
             .agg(F.max(F.struct("ts", "lp", "lo")).alias("sync")))
    first_gm = (gm.groupBy("run", "group_id", "generation_id", "member_id")
                .agg(F.min(F.struct("ts", "lp", "lo", "n_partitions", "tps", "protocol_name", "client_id",
                                    "group_instance_id")).alias("g")))
    assigned = (first_gm.join(syncs, ["run", "group_id", "generation_id", "member_id"], "left")
                .select("run", "group_id", "member_id", "generation_id",
                        F.greatest(F.struct(F.col("g.ts"), F.col("g.lp"), F.col("g.lo")),
                                   F.coalesce(F.col("sync"), F.struct(F.col("g.ts"), F.col("g.lp"),
                                                                      F.col("g.lo")))).alias("o"),
                        F.col("g.n_partitions").alias("n_partitions"), F.col("g.tps").alias("tps"),
                        F.col("g.protocol_name").alias("protocol_name"),
                        F.lit("assigned").alias("kind")))
    m = F.col("member_id")
    life = (flat.where(F.col("type").isin("MemberJoined", "MemberRejoined", "MemberRemoved", "StaticMemberReplaced"))
            .select("run", "group_id", "type", "reason", "ts", "lp", "lo",
                    F.explode(F.when(F.col("type") == "StaticMemberReplaced",
                                     F.array(F.struct(F.col("new_member_id").alias("id"), F.lit("join").alias("k")),
                                             F.struct(F.col("old_member_id").alias("id"),
                                                      F.lit("remove").alias("k"))))
                              .otherwise(F.array(F.struct(m.alias("id"),
                                                          F.when(F.col("type") == "MemberRemoved", "remove")
                                                          .otherwise("join").alias("k"))))).alias("e"))
            .select("run", "group_id", F.col("e.id").alias("member_id"), F.lit(None).cast("int").alias("generation_id"),
                    F.struct("ts", "lp", "lo").alias("o"), F.lit(None).cast("int").alias("n_partitions"),
                    F.lit(None).cast(gm.schema["tps"].dataType).alias("tps"),
                    F.lit(None).cast("string").alias("protocol_name"), F.col("e.k").alias("kind")))
    ev = assigned.unionByName(life)
    mw = W.partitionBy("run", "group_id", "member_id").orderBy("o")
    after = mw.rowsBetween(1, W.unboundedFollowing)
    coop = F.coalesce(F.col("protocol_name"), F.lit("")).isin(*COOPERATIVE_ASSIGNORS)
    ev = (ev.withColumn("next_stop_eager", F.first(F.when(F.col("kind").isin("join", "remove"), F.col("o.ts")),
                                                   ignorenulls=True).over(after))
          .withColumn("next_stop_coop", F.first(F.when(F.col("kind").isin("assigned", "remove"), F.col("o.ts")),
                                                ignorenulls=True).over(after)))
    iv = (ev.where(F.col("kind") == "assigned").join(ends, "run")
          .select("run", "group_id", "member_id", "generation_id", F.col("o.ts").alias("from_ms"),
                  F.coalesce(F.when(coop, F.col("next_stop_coop")).otherwise(F.col("next_stop_eager")),
                             F.col("run_end_ms")).alias("to_ms"),
                  "n_partitions", "tps"))
    lifetime = (ev.groupBy("run", "group_id", "member_id")
                .agg(F.min("o.ts").alias("first_seen_ms"),
                     F.min(F.when(F.col("kind") == "remove", F.col("o.ts"))).alias("removed_ms")))
    return iv, lifetime


def _union_len(df, keys, lo="from_ms", hi="to_ms"):
    """Length of the union of intervals [lo, hi) per key (sorted sweep: covered = hi - max(lo, max prior hi))."""
    F = _F()
    W = _W()
    w = W.partitionBy(*keys).orderBy(lo, hi).rowsBetween(W.unboundedPreceding, -1)
    df = df.withColumn("_prev_hi", F.max(hi).over(w))
    covered = F.greatest(F.lit(0), F.col(hi) - F.greatest(F.col(lo), F.coalesce("_prev_hi", F.col(lo))))
    return df.groupBy(*keys).agg(F.sum(covered).alias("covered_ms"))


def members(flat, gm, rb, iv, lifetime, ends):
    F = _F()
    life = lifetime.join(ends, "run").select(
        "run", "group_id", "member_id", "first_seen_ms",
        F.coalesce("removed_ms", "run_end_ms").alias("last_ms"))
    owned = (iv.where(F.col("n_partitions") > 0).join(life, ["run", "group_id", "member_id"])
             .select("run", "group_id", "member_id",
                     F.greatest("from_ms", "first_seen_ms").alias("from_ms"),
                     F.least("to_ms", "last_ms").alias("to_ms"))
             .where(F.col("to_ms") > F.col("from_ms")))
    cov = _union_len(owned, ["run", "group_id", "member_id"])
    joined = (rb.where(F.col("outcome") == "stable")
              .select("run", "group_id", F.explode("members").alias("member_id"))
              .groupBy("run", "group_id", "member_id").agg(F.count("*").alias("rebalances_joined")))
    removed = (flat.where(F.col("type") == "MemberRemoved")
               .groupBy("run", "group_id", "member_id")
               .agg(F.sum(F.col("reason").like("%heartbeat expiration%").cast("int")).alias("session_expiries"),
                    F.first("reason").alias("removed_reason")))
    names = (flat.where(F.col("type") == "MemberJoined")
             .select("run", "group_id", "member_id", "client_id", "group_instance_id")
             .unionByName(gm.select("run", "group_id", "member_id", "client_id", "group_instance_id"))
             .groupBy("run", "group_id", "member_id")
             .agg(F.first("client_id", ignorenulls=True).alias("client_id"),
                  F.first("group_instance_id", ignorenulls=True).alias("group_instance_id")))
    out = (life.join(cov, ["run", "group_id", "member_id"], "left")
           .join(joined, ["run", "group_id", "member_id"], "left")
           .join(removed, ["run", "group_id", "member_id"], "left")
           .join(names, ["run", "group_id", "member_id"], "left")
           .select("run", "group_id", "member_id", "client_id", "group_instance_id", "first_seen_ms", "last_ms",
                   (F.col("last_ms") - F.col("first_seen_ms")).alias("lifetime_ms"),
                   F.coalesce("covered_ms", F.lit(0)).alias("owned_ms"),
                   (F.col("last_ms") - F.col("first_seen_ms") - F.coalesce("covered_ms", F.lit(0)))
                   .alias("without_partitions_ms"),
                   F.coalesce("rebalances_joined", F.lit(0)).alias("rebalances_joined"),
                   F.coalesce("session_expiries", F.lit(0)).alias("session_expiries"),
                   "removed_reason"))
    return out


def partition_intervals(iv):
    F = _F()
    return (iv.where(F.col("n_partitions") > 0)
            .select("run", "group_id", "member_id", "generation_id", "from_ms", "to_ms", F.explode("tps").alias("tp"))
            .select("run", "group_id", F.col("tp.topic").alias("topic"), F.col("tp.partition").alias("partition"),
                    "member_id", "generation_id", "from_ms", "to_ms"))


def partitions(flat, piv, ends, rb):
    F = _F()
    start = (flat.where(F.col("type") == "RebalanceStarted").groupBy("run", "group_id")
             .agg(F.min("ts").alias("window_start_ms")))
    win = start.join(ends, "run")
    clipped = (piv.join(win, ["run", "group_id"])
               .select("run", "group_id", "topic", "partition", "member_id",
                       F.greatest("from_ms", "window_start_ms").alias("from_ms"),
                       F.least("to_ms", "run_end_ms").alias("to_ms"))
               .where(F.col("to_ms") > F.col("from_ms")))
    cov = _union_len(clipped, ["run", "group_id", "topic", "partition"])
    owners = (piv.groupBy("run", "group_id", "topic", "partition")
              .agg(F.countDistinct("member_id").alias("owners"), F.count("*").alias("assignments")))
    return (owners.join(win, ["run", "group_id"])
            .join(cov, ["run", "group_id", "topic", "partition"], "left")
            .select("run", "group_id", "topic", "partition", "window_start_ms",
                    F.col("run_end_ms").alias("window_end_ms"),
                    F.coalesce("covered_ms", F.lit(0)).alias("owned_ms"),
                    (F.col("run_end_ms") - F.col("window_start_ms") - F.coalesce("covered_ms", F.lit(0)))
                    .alias("unowned_ms"),
                    "owners", "assignments"))


def assignors(rb, parts):
    """Comparison per (scenario, assignor) over every run and group that used it."""
    F = _F()
    done = rb.where(F.col("outcome") == "stable")
    group_assignor = (done.groupBy("run", "group_id")
                      .agg(F.max_by("assignor", "rebalance_no").alias("assignor")))
    scen = F.coalesce(F.nullif(F.col("scenario"), F.lit("")), F.lit("(unnamed)"))
    agg = (done.withColumn("scenario", scen).groupBy("scenario", "assignor")
           .agg(F.countDistinct("run").alias("runs"),
                F.countDistinct("run", "group_id").alias("groups"),
                F.count("*").alias("rebalances"),
                F.avg("stw_ms").alias("mean_stw_ms"),
                F.percentile("stw_ms", 0.5).alias("p50_stw_ms"),
                F.percentile("stw_ms", 0.95).alias("p95_stw_ms"),
                F.max("stw_ms").alias("max_stw_ms"),
                F.sum("stw_ms").alias("total_stw_ms"),
                F.sum("partitions_moved").alias("partitions_moved"),
                F.avg("partitions_moved").alias("mean_moved_per_rebalance"),
                F.sum("partitions_revoked").alias("partitions_revoked"),
                F.avg("balance").alias("mean_balance"),
                F.max("balance").alias("max_balance")))
    sc_unowned = (parts.join(group_assignor, ["run", "group_id"])
                  .join(rb.select("run", scen.alias("scenario")).distinct(), "run")
                  .groupBy("scenario", "assignor").agg(F.avg("unowned_ms").alias("mean_unowned_ms_per_partition")))
    return agg.join(sc_unowned, ["scenario", "assignor"], "left")


#: How each table is ordered when it is shown (the tables themselves are not sorted: a global sort is a job).
ORDER = {
    "rebalances": ("run", "group_id", "rebalance_no"),
    "members": ("run", "group_id", "first_seen_ms", "member_id"),
    "partitions": ("run", "group_id", "topic", "partition"),
    "assignors": ("scenario", "assignor"),
    "intervals": ("run", "group_id", "topic", "partition", "from_ms"),
    "member_intervals": ("run", "group_id", "member_id", "from_ms"),
}


def compute(events, cache: bool = True) -> Tables:
    """All tables from an events DataFrame (``analysis.load.read_runs``)."""
    flat, ends = flatten(events, cache)
    if cache:
        flat = flat.cache()
        ends = ends.cache()
    gm = group_members(flat)
    if cache:
        gm = gm.cache()
    rb = rebalances(flat, gm, cache)
    if cache:
        rb = rb.cache()
    iv, lifetime = ownership(flat, gm, ends)
    if cache:
        iv = iv.cache()
    mem = members(flat, gm, rb, iv, lifetime, ends)
    piv = partition_intervals(iv)
    parts = partitions(flat, piv, ends, rb)
    tables = Tables(rebalances=rb, members=mem, partitions=parts, assignors=assignors(rb, parts),
                    intervals=piv, member_intervals=iv.drop("tps"))
    if cache:
        for name, df in tables.as_dict().items():
            setattr(tables, name, df.cache())
    return tables
