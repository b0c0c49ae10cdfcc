"""The narration catalogue: every sentence kgroup says while teaching, in English and Chinese.

Theory of operation
-------------------
* One table, :data:`MESSAGES`: a key (``area.what``) -> one template per language (``str.format`` syntax; format
  specs and ``!r`` are allowed). Code never holds a sentence: it calls ``Catalogue(lang)(key, **values)``.
* Every key has every language of :data:`LANGS`, and the templates of one key take the same placeholders in every
  language (``tests/kgroup/test_catalogue.py`` fails otherwise, and when a key used in ``kgroup/`` is missing here
  or a key here is used nowhere).
* Kafka's own words stay as Kafka writes them in every language: API names (``JOIN_GROUP``), configuration names
  (``session.timeout.ms``), error names (``REBALANCE_IN_PROGRESS``), group states (``PreparingRebalance``),
  callback names (``onPartitionsAssigned``) and the coordinator's reason strings, which are Kafka's log text.
* The Chinese is written with the terms of the source articles (``../shared/seeds``): 协调者 / 组协调器
  (GroupCoordinator), 消费者协调器 (ConsumerCoordinator), 消费者组, 再平衡, 分区分配策略, 心跳, 订阅, 分区, 副本,
  leader 消费者, 消费位移.
* Areas: ``common.*`` and ``step.*`` (shared), ``demo.*`` (``kgroup demo``; ``demo.cg.*`` its
  ``--protocol consumer`` story, ``demo.compare.*`` its ``--compare`` table), ``narr.*`` (narration of the classic
  protocol from records and trace: ``kgroup run --narrate``, ``kgroup serve --narrate``), ``serve.*``,
  ``diagram.*``. ``narr.cg.*`` narrates KIP-848 consumer groups (``group.protocol=consumer``) from their
  ``ConsumerGroup*`` records (kgroup/narrate_cg.py): ConsumerGroupHeartbeat, group epoch, target assignment,
  member epoch, revocation before assignment.
"""

from __future__ import annotations

import string
import unicodedata

LANGS = ("en", "zh")
DEFAULT_LANG = "en"

MESSAGES: dict[str, dict[str, str]] = {
    # --- shared ----------------------------------------------------------------------------------------------------
    "common.coordinator": {"en": "coordinator", "zh": "协调者"},
    "common.producer": {"en": "producer", "zh": "生产者"},
    "common.cluster": {"en": "cluster", "zh": "集群"},
    "common.none": {"en": "(none)", "zh": "（无）"},
    "step.prompt": {
        "en": "-- paused: Enter or n = next step, c = continue without pausing, q = quit -- ",
        "zh": "—— 已暂停：回车或 n = 下一步，c = 不再暂停、一直运行，q = 退出 —— ",
    },
    "step.quit": {"en": "stopped at your request.", "zh": "已按你的要求停止。"},

    # --- kgroup demo ------------------------------------------------------------------------------------------------
    "demo.title": {
        "en": "kgroup demo: Kafka's classic consumer-group protocol, live over TCP on loopback.",
        "zh": "kgroup demo：Kafka 经典消费者组协议（classic protocol），在本机回环地址上通过 TCP 实时演示。",
    },
    "demo.timeouts": {
        "en": "Short timeouts for the demo: session.timeout.ms={session}, heartbeat.interval.ms={heartbeat}, "
              "group.initial.rebalance.delay.ms={delay},\ngroup.min.session.timeout.ms={min_session} (Kafka's "
              "defaults: 45000, 3000, 3000, 6000).",
        "zh": "为了演示缩短了超时：session.timeout.ms={session}，heartbeat.interval.ms={heartbeat}，"
              "group.initial.rebalance.delay.ms={delay}，\ngroup.min.session.timeout.ms={min_session}（Kafka 的默认值"
              "依次是 45000、3000、3000、6000）。",
    },
    "demo.phase.cluster": {"en": "the cluster", "zh": "集群"},
    "demo.broker_listens": {"en": "  broker {broker} listens on {host}:{port}",
                            "zh": "  broker {broker} 监听 {host}:{port}"},
    "demo.topic": {
        "en": "  topic {topic!r}: {partitions} partitions; __consumer_offsets: {offsets_partitions} partitions spread "
              "over the brokers",
        "zh": "  主题 {topic!r}：{partitions} 个分区；__consumer_offsets：{offsets_partitions} 个分区，分散在各个 broker 上",
    },
    "demo.phase.find": {
        "en": "phase 1: FIND_COORDINATOR -- which broker coordinates group {group!r}?",
        "zh": "第一阶段：FIND_COORDINATOR —— 哪个 broker 是消费者组 {group!r} 的协调者？",
    },
    "demo.hash": {"en": "  {group!r}.hashCode()  = {hash}   (Java String.hashCode, 32-bit)",
                  "zh": "  {group!r}.hashCode()  = {hash}   （Java 的 String.hashCode，32 位整数）"},
    "demo.abs": {"en": "  Utils.abs({hash}) = {abs}   (Kafka's abs: Integer.MIN_VALUE -> 0)",
                 "zh": "  Utils.abs({hash}) = {abs}   （Kafka 自己的 abs：Integer.MIN_VALUE -> 0）"},
    "demo.mod": {
        "en": "  {abs} % offsets.topic.num.partitions ({n}) = {partition}  -> __consumer_offsets partition {partition}",
        "zh": "  {abs} % offsets.topic.num.partitions（{n}）= {partition}  -> __consumer_offsets 的 {partition} 号分区",
    },
    "demo.leader": {
        "en": "  the leader of __consumer_offsets-{partition} is broker {broker}  -> broker {broker} ({host}:{port}) is "
              "the group coordinator",
        "zh": "  __consumer_offsets-{partition} 的 leader 副本在 broker {broker} 上  -> broker {broker}（{host}:{port}）"
              "就是这个组的协调者（GroupCoordinator）",
    },
    "demo.negotiate": {
        "en": "  (every connection first negotiates versions with API_VERSIONS; METADATA gives the brokers)",
        "zh": "  （每条连接先用 API_VERSIONS 协商协议版本；METADATA 告诉客户端集群里有哪些 broker）",
    },
    "demo.phase.live": {
        "en": "phases 1-3: FIND_COORDINATOR -> JOIN_GROUP -> SYNC_GROUP, as it happens",
        "zh": "第一至第三阶段：FIND_COORDINATOR -> JOIN_GROUP -> SYNC_GROUP，实时过程",
    },
    "demo.assignments_now": {"en": "  assignments now (generation {generation}):",
                             "zh": "  当前的分区分配（generation {generation}）："},
    "demo.phase.heartbeat": {
        "en": "phase 4: HEARTBEAT -- the group is stable; watching for {ms} ms",
        "zh": "第四阶段：HEARTBEAT —— 组已稳定（Stable）；观察 {ms} ms",
    },
    "demo.heartbeats": {
        "en": "  {consumer}: {ok} heartbeats answered NONE{errors}; position advanced to {position} records over "
              "{partitions} partitions ({poll_ms:g} ms per poll)",
        "zh": "  {consumer}：{ok} 次心跳得到 NONE 响应{errors}；消费位置前进到 {position} 条消息，"
              "共 {partitions} 个分区（每次 poll 处理 {poll_ms:g} ms）",
    },
    "demo.heartbeat_errors": {"en": ", {n} with errors", "zh": "，{n} 次返回错误"},
    "demo.phase.leave": {
        "en": "phase 5: {consumer} leaves cleanly (close(): commit, onPartitionsRevoked, LEAVE_GROUP)",
        "zh": "第五阶段：{consumer} 正常退出（close()：提交消费位移、onPartitionsRevoked、LEAVE_GROUP）",
    },
    "demo.leave_explained": {
        "en": "  the LeaveGroup started the rebalance at once (no session timeout needed); the others learned of it\n"
              "  from their next heartbeat and rejoined at their next poll",
        "zh": "  LeaveGroup 立刻触发了再平衡（不必等会话超时）；其余消费者从下一次心跳得知此事，\n"
              "  并在下一次 poll 时重新加入",
    },
    "demo.phase.kill": {
        "en": "phase 6: {consumer} is killed (sockets dropped, no LEAVE_GROUP)",
        "zh": "第六阶段：{consumer} 被强行杀掉（连接直接断开，不发 LEAVE_GROUP）",
    },
    "demo.killed": {
        "en": "killed; the coordinator hears nothing until session.timeout.ms={session} ms pass without a heartbeat",
        "zh": "已被杀掉；协调者什么也收不到，直到 session.timeout.ms={session} ms 内都没有心跳",
    },
    "demo.kill_result": {
        "en": "  {consumer} was removed and the group rebalanced {seconds:.2f} s after the kill; meanwhile nobody "
              "consumed {partitions}",
        "zh": "  {consumer} 在被杀 {seconds:.2f} 秒后被移出，组完成了再平衡；这段时间里 {partitions} 没有任何消费者在消费",
    },
    "demo.done": {"en": "done in {seconds:.1f} s.", "zh": "完成，用时 {seconds:.1f} 秒。"},
    "demo.coord.pending": {
        "en": "JoinGroup without member id -> MEMBER_ID_REQUIRED, new id {member} (KIP-394)",
        "zh": "JoinGroup 没有带 member_id -> 回复 MEMBER_ID_REQUIRED，新 id 为 {member}（KIP-394）",
    },
    "demo.coord.joined": {
        "en": "member {member} joined, supports [{protocols}]; its JoinGroup is parked until the join phase completes",
        "zh": "成员 {member} 加入，支持的分区分配策略 [{protocols}]；它的 JoinGroup 先挂起，等加入阶段结束再响应",
    },
    "demo.coord.rejoined": {"en": "member {member} rejoined", "zh": "成员 {member} 重新加入"},
    "demo.coord.rebalance": {"en": "rebalance started: {reason}", "zh": "开始再平衡：{reason}"},
    "demo.coord.rebalance_initial": {
        "en": "rebalance started: {reason} (initial rebalance: waits group.initial.rebalance.delay.ms={delay} ms for "
              "more members)",
        "zh": "开始再平衡：{reason}（首次再平衡：先等 group.initial.rebalance.delay.ms={delay} ms，让更多成员加入）",
    },
    "demo.coord.extended": {
        "en": "a member arrived during the initial delay: extended by {ms} ms",
        "zh": "初始等待期间又有成员加入：再延长 {ms} ms",
    },
    "demo.coord.join_complete": {
        "en": "join phase complete: generation {generation}, protocol {protocol!r}, leader {leader}, {n} member(s)",
        "zh": "加入阶段结束：generation {generation}，分区分配策略 {protocol!r}，leader 消费者 {leader}，共 {n} 个成员",
    },
    "demo.coord.stable": {
        "en": "leader's SyncGroup stored -> group Stable at generation {generation}",
        "zh": "leader 的 SyncGroup 已存入 __consumer_offsets -> 组进入 Stable，generation {generation}",
    },
    "demo.coord.stable_took": {
        "en": "leader's SyncGroup stored -> group Stable at generation {generation} (rebalance took {ms} ms)",
        "zh": "leader 的 SyncGroup 已存入 __consumer_offsets -> 组进入 Stable，generation {generation}"
              "（这次再平衡用了 {ms} ms）",
    },
    "demo.coord.removed": {"en": "member {member} removed: {reason}", "zh": "成员 {member} 被移出：{reason}"},
    "demo.wire.heartbeat_ok": {
        "en": "<- HEARTBEAT NONE from {where} (then every {ms} ms; counted, not printed)",
        "zh": "<- HEARTBEAT NONE，来自 {where}（之后每 {ms} ms 一次；只计数，不再打印）",
    },
    "demo.wire.heartbeat_rebalance": {
        "en": "<- HEARTBEAT REBALANCE_IN_PROGRESS from {where}: must rejoin",
        "zh": "<- HEARTBEAT REBALANCE_IN_PROGRESS，来自 {where}：必须重新加入组",
    },
    "demo.wire.find": {
        "en": "-> {api} v{version} key={key!r} to {where} (any broker will do)",
        "zh": "-> {api} v{version} key={key!r}，发往 {where}（任意一个 broker 都能回答）",
    },
    "demo.wire.join": {
        "en": "-> {api} v{version} to {where} member_id={member} protocols=[{protocols}]",
        "zh": "-> {api} v{version}，发往 {where}，member_id={member}，分区分配策略=[{protocols}]",
    },
    "demo.wire.sync_leader": {
        "en": "-> {api} v{version} to {where} generation {generation}, {n} assignment(s) (leader)",
        "zh": "-> {api} v{version}，发往 {where}，generation {generation}，带着 {n} 份分配方案（leader）",
    },
    "demo.wire.sync_follower": {
        "en": "-> {api} v{version} to {where} generation {generation}, no assignments (follower)",
        "zh": "-> {api} v{version}，发往 {where}，generation {generation}，不带分配方案（follower）",
    },
    "demo.wire.leave": {"en": "-> {api} v{version} to {where} (clean shutdown)",
                        "zh": "-> {api} v{version}，发往 {where}（正常关闭）"},
    "demo.wire.found": {
        "en": "<- {api} {error}: coordinator is broker {node} ({host}:{port})",
        "zh": "<- {api} {error}：协调者是 broker {node}（{host}:{port}）",
    },
    "demo.wire.join_leader": {
        "en": "<- {api} NONE generation {generation} protocol {protocol!r} leader {leader}: LEADER, gets the "
              "subscriptions of all {n} member(s)",
        "zh": "<- {api} NONE，generation {generation}，分区分配策略 {protocol!r}，leader {leader}：自己就是 leader，"
              "拿到全部 {n} 个成员的订阅信息",
    },
    "demo.wire.join_follower": {
        "en": "<- {api} NONE generation {generation} protocol {protocol!r} leader {leader}: follower",
        "zh": "<- {api} NONE，generation {generation}，分区分配策略 {protocol!r}，leader {leader}：普通成员（follower）",
    },
    "demo.wire.error": {"en": "<- {api} {error}", "zh": "<- {api} {error}"},
    "demo.wire.error_member": {"en": "<- {api} {error} member_id={member}", "zh": "<- {api} {error}，member_id={member}"},
    "demo.leader_assigns": {
        "en": "as leader, runs the {protocol!r} assignor (generation {generation}):",
        "zh": "作为 leader，运行 {protocol!r} 分配策略（generation {generation}）：",
    },
    "demo.cb.revoked": {"en": "onPartitionsRevoked({partitions})", "zh": "onPartitionsRevoked({partitions})（撤销分区）"},
    "demo.cb.assigned": {"en": "onPartitionsAssigned({partitions})",
                         "zh": "onPartitionsAssigned({partitions})（分到分区）"},
    "demo.cb.lost": {"en": "onPartitionsLost({partitions})", "zh": "onPartitionsLost({partitions})（分区已丢失）"},
    "demo.vote.header": {"en": "  the protocol vote (ClassicGroup.selectProtocol):",
                         "zh": "  分区分配策略的投票（ClassicGroup.selectProtocol）："},
    "demo.vote.candidates": {"en": "    candidates (supported by every member): {candidates}",
                             "zh": "    候选集（每个成员都支持的策略）：{candidates}"},
    "demo.vote.member": {"en": "    {consumer} prefers {protocols} -> votes {vote!r}",
                         "zh": "    {consumer} 的偏好顺序 {protocols} -> 投给 {vote!r}"},
    "demo.vote.tally": {"en": "    tally {tally} -> the coordinator chose {protocol!r}",
                        "zh": "    计票 {tally} -> 协调者选定 {protocol!r}"},
    "demo.vote.tie": {
        "en": "    (a tie: Kafka takes the first maximum in java.util.HashMap iteration order of the names)",
        "zh": "    （平票：Kafka 取 java.util.HashMap 遍历顺序中第一个票数最多的策略）",
    },
    "demo.vote.leader": {
        "en": "  the leader is the first member that joined: {leader}; only the leader runs the assignor, followers get "
              "their share in the SyncGroup response",
        "zh": "  leader 消费者是第一个加入的成员：{leader}；只有 leader 执行分区分配，其他成员从 SyncGroup 的响应里拿到"
              "自己的那一份",
    },
    "demo.cause.left": {"en": "{who} left (LeaveGroup)", "zh": "{who} 离开（LeaveGroup）"},
    "demo.cause.session": {"en": "{who}: session timeout", "zh": "{who}：会话超时"},
    "demo.cause.joined_initial": {"en": "{who} joined (initial delay {delay})", "zh": "{who} 加入（初始等待 {delay}）"},
    "demo.cause.joined": {"en": "{who} joined", "zh": "{who} 加入"},
    "demo.cause.delay_extended": {"en": "{n} x {ms} ms", "zh": "{n} x {ms} ms"},
    "demo.cause.someone": {"en": "a member", "zh": "某个成员"},
    "demo.phase.summary": {
        "en": "summary: one row per rebalance (times from the coordinator's records)",
        "zh": "总结：每次再平衡一行（时间取自协调者的记录）",
    },
    "demo.summary.header": {"en": "  {gen}  {took}  {cause}  members <- partitions",
                            "zh": "  {gen}  {took}  {cause}  成员 <- 分区"},
    "demo.summary.gen": {"en": "gen", "zh": "代"},
    "demo.summary.took": {"en": "took", "zh": "耗时"},
    "demo.summary.cause": {"en": "cause", "zh": "原因"},
    "demo.summary.legend": {
        "en": "  (* = the generation's leader; 'took' = from RebalanceStarted to the Stable GroupMetadata record)",
        "zh": "  （* = 该 generation 的 leader 消费者；耗时 = 从 RebalanceStarted 到 Stable 的 GroupMetadata 记录）",
    },
    "demo.diagrams_written": {"en": "sequence diagrams of each phase: {path}",
                              "zh": "每个阶段的时序图已写到：{path}"},
    # --- kgroup demo --protocol consumer (kgroup/demo_consumer.py) ------------------------------------------------------
    "demo.cg.title": {
        "en": "kgroup demo --protocol consumer: KIP-848's consumer group protocol (group.protocol=consumer), live over "
              "TCP on loopback.",
        "zh": "kgroup demo --protocol consumer：KIP-848 新一代消费者组协议（group.protocol=consumer），在本机回环地址上"
              "通过 TCP 实时演示。",
    },
    "demo.cg.timeouts": {
        "en": "The coordinator decides the timing now: group.consumer.session.timeout.ms={session}, "
              "group.consumer.heartbeat.interval.ms={heartbeat} (Kafka's defaults: 45000, 5000),\n"
              "group.consumer.assignment.interval.ms=0 (no wait between two targets); server-side assignor: {assignor!r} "
              "(group.consumer.assignors' first). No JoinGroup, no SyncGroup, no leader consumer.",
        "zh": "新协议由协调者决定时间参数：group.consumer.session.timeout.ms={session}，"
              "group.consumer.heartbeat.interval.ms={heartbeat}（Kafka 默认值依次是 45000、5000），\n"
              "group.consumer.assignment.interval.ms=0（两次计算目标分配之间不必等待）；服务端分区分配策略：{assignor!r}"
              "（group.consumer.assignors 的第一个）。没有 JoinGroup，没有 SyncGroup，也没有 leader 消费者。",
    },
    "demo.cg.assignor_unset": {"en": "none (the coordinator's default)", "zh": "未指定（用协调者的默认策略）"},
    "demo.cg.phase.first": {
        "en": "phase 2: {consumer} joins alone -- ConsumerGroupHeartbeat with member epoch 0",
        "zh": "第二阶段：{consumer} 独自加入 —— 发送 member epoch 为 0 的 ConsumerGroupHeartbeat",
    },
    "demo.cg.first_explained": {
        "en": "  one request did it all: the heartbeat that joined bumped the group epoch, the coordinator computed the\n"
              "  target assignment itself and answered with the member's epoch and partitions",
        "zh": "  一次请求就完成了全部工作：加入用的这次心跳让 group epoch 加一，协调者自己算出目标分配，\n"
              "  并在响应里直接给出这个成员的 member epoch 和分区",
    },
    "demo.cg.phase.join": {
        "en": "phase 3: {consumer} joins (member {n}) -- the others keep consuming; revocation before assignment",
        "zh": "第三阶段：{consumer} 加入（第 {n} 个成员）—— 其他成员照常消费；先撤销，后分配",
    },
    "demo.cg.join_explained": {
        "en": "  partitions that stayed with their owner: {kept} -- consumed without a pause; moved to make room for "
              "{consumer}: {moved}\n  (each revoked by its old owner, acknowledged in a heartbeat, then given to the "
              "new one -- never two owners at once)",
        "zh": "  留在原消费者手里的分区：{kept} —— 消费一刻也没停；为了给 {consumer} 腾位置而移动的分区：{moved}\n"
              "  （原持有者先撤销，并在心跳中确认，之后才分给新的持有者 —— 任何时刻都不会有两个持有者）",
    },
    "demo.cg.assignments_now": {"en": "  assignments now (group epoch {epoch}):",
                                "zh": "  当前的分区分配（group epoch {epoch}）："},
    "demo.cg.member_epoch": {"en": "member epoch {epoch:>2}", "zh": "member epoch {epoch:>2}（成员纪元）"},
    "demo.cg.phase.heartbeat": {
        "en": "phase 4: the group is stable: only heartbeats; watching for {ms} ms",
        "zh": "第四阶段：消费者组已稳定，只剩心跳；观察 {ms} ms",
    },
    "demo.cg.heartbeats": {
        "en": "  {consumer}: {ok} ConsumerGroupHeartbeats answered NONE at member epoch {epoch}{errors}; position "
              "advanced to {position} records over {partitions} partitions ({poll_ms:g} ms per poll)",
        "zh": "  {consumer}：{ok} 次 ConsumerGroupHeartbeat 得到 NONE 响应，member epoch {epoch}{errors}；消费位置前进到 "
              "{position} 条消息，共 {partitions} 个分区（每次 poll 处理 {poll_ms:g} ms）",
    },
    "demo.cg.heartbeat_explained": {
        "en": "  a steady heartbeat carries no subscription and no partitions (null: unchanged since the last one); the\n"
              "  answer has no assignment unless it changed",
        "zh": "  稳定时的心跳不带订阅，也不带分区（null 表示和上一次相同）；只有分配变了，响应里才会带上新的分配",
    },
    "demo.cg.phase.leave": {
        "en": "phase 5: {consumer} leaves cleanly (close(): commit, onPartitionsRevoked, ConsumerGroupHeartbeat with "
              "member epoch -1)",
        "zh": "第五阶段：{consumer} 正常退出（close()：提交消费位移、onPartitionsRevoked、发送 member epoch 为 -1 的 "
              "ConsumerGroupHeartbeat）",
    },
    "demo.cg.leave_explained": {
        "en": "  the leave bumped the group epoch at once; the new target gave the leaver's partitions to the others,\n"
              "  which received them with their next heartbeat -- nobody revoked anything, nobody stopped",
        "zh": "  离开的请求立刻让 group epoch 加一；新的目标分配把离开者的分区分给其他成员，\n"
              "  它们在下一次心跳时拿到这些分区 —— 没有人需要撤销分区，也没有人停下来",
    },
    "demo.cg.phase.kill": {
        "en": "phase 6: {consumer} is killed (sockets dropped, no leave heartbeat)",
        "zh": "第六阶段：{consumer} 被强行杀掉（连接直接断开，不发离开的心跳）",
    },
    "demo.cg.killed": {
        "en": "killed; the coordinator fences it once group.consumer.session.timeout.ms={session} ms pass without a "
              "heartbeat",
        "zh": "已被杀掉；group.consumer.session.timeout.ms={session} ms 内都没有心跳后，协调者会把它隔离（fence）",
    },
    "demo.cg.wire.join": {
        "en": "-> {api} v{version} to {where}: member epoch 0 = join, member_id={member} (generated by the client, "
              "KIP-1082), subscribe [{topics}], rebalance timeout {rebalance} ms, server assignor {assignor}",
        "zh": "-> {api} v{version}，发往 {where}：member epoch 为 0 即申请加入，member_id={member}（由客户端自己生成，"
              "KIP-1082），订阅 [{topics}]，再平衡超时 {rebalance} ms，服务端分区分配策略 {assignor}",
    },
    "demo.cg.wire.owned": {
        "en": "-> {api} v{version} to {where}: member epoch {epoch}, now owns {owned} (acknowledges a revocation or "
              "an assignment)",
        "zh": "-> {api} v{version}，发往 {where}：member epoch {epoch}，现在持有 {owned}（确认已完成撤销或分配）",
    },
    "demo.cg.wire.leave": {
        "en": "-> {api} v{version} to {where}: member epoch -1 = leave the group",
        "zh": "-> {api} v{version}，发往 {where}：member epoch 为 -1，即离开消费者组",
    },
    "demo.cg.wire.left": {"en": "<- {api} NONE: member epoch {epoch}, out of the group",
                          "zh": "<- {api} NONE：member epoch {epoch}，已离开消费者组"},
    "demo.cg.wire.assignment": {
        "en": "<- {api} NONE: member epoch {epoch}, assignment {partitions}; heartbeat every {interval} ms",
        "zh": "<- {api} NONE：member epoch {epoch}，分配 {partitions}；每 {interval} ms 发一次心跳",
    },
    "demo.cg.wire.epoch": {
        "en": "<- {api} NONE: member epoch {old} -> {epoch}, same partitions (nothing to revoke or receive)",
        "zh": "<- {api} NONE：member epoch {old} -> {epoch}，分区不变（没有要撤销或接收的分区）",
    },
    "demo.cg.wire.error": {"en": "<- {api} {error} {message}", "zh": "<- {api} 返回错误 {error} {message}"},
    "demo.cg.wire.heartbeat_ok": {
        "en": "<- ConsumerGroupHeartbeat NONE from {where} (then every {ms} ms; counted, not printed)",
        "zh": "<- ConsumerGroupHeartbeat NONE，来自 {where}（之后每 {ms} ms 一次；只计数，不再打印）",
    },
    "demo.cg.cause.fenced": {"en": "{member} fenced (session timeout)", "zh": "{member} 被隔离（会话超时）"},
    "demo.cg.phase.summary": {
        "en": "summary: every group epoch, from the coordinator's records",
        "zh": "总结：每一个 group epoch（依据协调者的记录）",
    },
    "demo.cg.summary.header": {"en": "  {epoch}  {took}  {cause}  target: member <- partitions",
                               "zh": "  {epoch}  {took}  {cause}  目标分配：成员 <- 分区"},
    "demo.cg.summary.epoch": {"en": "epoch", "zh": "组 epoch"},
    "demo.cg.summary.legend": {
        "en": "  took = from the group epoch bump until every member was STABLE at that epoch (owned its target); no "
              "member stopped meanwhile",
        "zh": "  耗时 = 从 group epoch 加一，到所有成员都在该 epoch 上进入 STABLE（拿到全部目标分区）为止；期间没有成员停止消费",
    },
    # --- kgroup demo --compare (kgroup/demo_compare.py) ----------------------------------------------------------------
    "demo.compare.title": {
        "en": "kgroup demo --compare: the demo's story under the eager, cooperative and consumer protocols, in the "
              "simulator (virtual time)",
        "zh": "kgroup demo --compare：同一个演示故事分别用 eager、cooperative 和 consumer 三种协议运行（模拟器，虚拟时间）",
    },
    "demo.compare.story": {
        "en": "  {consumers} consumers on {topic!r} ({partitions} partitions), every {gap:g} s: c1 starts, c2..c{consumers} "
              "join one at a time, {leaver} leaves, {victim} is killed;\n  session timeout {session} ms, heartbeat "
              "{heartbeat} ms, {poll_ms:g} ms of processing per poll under every protocol;\n  eager = range, "
              "cooperative = cooperative-sticky, consumer = uniform",
        "zh": "  {consumers} 个消费者订阅 {topic!r}（{partitions} 个分区），每隔 {gap:g} 秒一步：c1 启动，c2..c{consumers} 依次加入，"
              "{leaver} 正常退出，{victim} 被杀掉；\n  三种协议的会话超时都是 {session} ms，心跳间隔都是 {heartbeat} ms，"
              "每次 poll 处理 {poll_ms:g} ms；\n  eager 用 range，cooperative 用 cooperative-sticky，consumer 用 uniform",
    },
    "demo.compare.measure": {
        "en": "  time each partition had no owner (from the consumers' rebalance callbacks in the run's trace), from "
              "the moment every partition first had one to the end, in ms:",
        "zh": "  每个分区没有持有者的时间（依据运行 trace 中消费者的再平衡回调），从所有分区第一次都有持有者开始到运行结束，"
              "单位 ms：",
    },
    "demo.compare.partition": {"en": "partition", "zh": "分区"},
    "demo.compare.total_max": {"en": "total / max", "zh": "合计 / 最长"},
    "demo.compare.all": {"en": "all", "zh": "全部"},
    "demo.compare.stopped": {"en": "all stopped", "zh": "全部停止"},
    "demo.compare.never": {"en": "never idle", "zh": "从未空闲"},
    "demo.compare.changes": {"en": "rebalances", "zh": "再平衡次数"},
    "demo.compare.legend": {
        "en": "  all stopped = {ms} during which every partition was unowned at once (a stop-the-world); never idle = "
              "partitions that always had an owner;\n  rebalances = classic generations / consumer-protocol "
              "reconciliations. Eager revokes everything at each rebalance; cooperative and consumer revoke only "
              "what moves,\n  so the partitions that stay put never stop. A killed consumer's partitions wait for the "
              "session timeout under every protocol.",
        "zh": "  全部停止 = 所有分区同时没有持有者的 {ms} 数（stop-the-world）；从未空闲 = 始终有持有者的分区数；\n"
              "  再平衡次数 = 经典协议的 generation 数 / 新协议的调和（reconciliation）次数。eager 每次再平衡都撤销全部分区；"
              "cooperative 和 consumer 只撤销要移动的分区，\n  所以留在原处的分区从不停止消费。被杀掉的消费者的分区，"
              "在三种协议下都要等会话超时。",
    },
    "demo.compare.invariants": {
        "en": "  the three runs (seed {seed}, {virtual:g} s virtual): invariants {verdict}",
        "zh": "  三组运行（seed {seed}，虚拟时间 {virtual:g} 秒）：不变量检查 {verdict}",
    },
    # --- sequence diagrams (kgroup diagram, kgroup demo --diagrams) ---------------------------------------------------
    "diagram.coordinator": {"en": "coordinator (broker {node})", "zh": "协调者（broker {node}）"},
    "diagram.title_demo": {"en": "kgroup demo, group {group}: {phase}", "zh": "kgroup demo，消费者组 {group}：{phase}"},
    "diagram.title_run": {"en": "{source}: {groups}, {start} to {end} ms", "zh": "{source}：{groups}，{start} 至 {end} ms"},
    "diagram.find_req": {"en": "FIND_COORDINATOR key={key}", "zh": "FIND_COORDINATOR key={key}（查找协调者）"},
    "diagram.find_resp": {"en": "FIND_COORDINATOR {error}: coordinator = broker {node}",
                          "zh": "FIND_COORDINATOR {error}：协调者 = broker {node}"},
    "diagram.join_req": {"en": "JOIN_GROUP member_id={member} [{protocols}]",
                         "zh": "JOIN_GROUP member_id={member}，策略 [{protocols}]"},
    "diagram.join_req_new": {"en": "JOIN_GROUP member_id=\"\"", "zh": "JOIN_GROUP member_id=\"\"（首次加入）"},
    "diagram.join_resp_required": {"en": "JOIN_GROUP MEMBER_ID_REQUIRED, member_id={member}",
                                   "zh": "JOIN_GROUP MEMBER_ID_REQUIRED，分配 member_id={member}"},
    "diagram.join_resp_leader": {"en": "JOIN_GROUP gen {generation}: you are the leader, {n} subscriptions",
                                 "zh": "JOIN_GROUP generation {generation}：你是 leader，附 {n} 份订阅信息"},
    "diagram.join_resp_follower": {"en": "JOIN_GROUP gen {generation}: follower, leader {leader}",
                                   "zh": "JOIN_GROUP generation {generation}：follower，leader 是 {leader}"},
    "diagram.join_resp_leader_trace": {"en": "JOIN_GROUP gen {generation}: you are the leader",
                                       "zh": "JOIN_GROUP generation {generation}：你是 leader"},
    "diagram.join_resp_follower_trace": {"en": "JOIN_GROUP gen {generation}: follower",
                                         "zh": "JOIN_GROUP generation {generation}：普通成员（follower）"},
    "diagram.sync_req_leader": {"en": "SYNC_GROUP gen {generation} with {n} assignments",
                                "zh": "SYNC_GROUP generation {generation}，带 {n} 份分配方案"},
    "diagram.sync_req_follower": {"en": "SYNC_GROUP gen {generation} (no assignment)",
                                  "zh": "SYNC_GROUP generation {generation}（不带分配方案）"},
    "diagram.sync_resp": {"en": "SYNC_GROUP {error}: {partitions}", "zh": "SYNC_GROUP {error}：{partitions}"},
    "diagram.heartbeat_req": {"en": "HEARTBEAT gen {generation}", "zh": "HEARTBEAT generation {generation}（心跳）"},
    "diagram.heartbeat_resp": {"en": "HEARTBEAT {error}", "zh": "HEARTBEAT {error}"},
    "diagram.leave_req": {"en": "LEAVE_GROUP", "zh": "LEAVE_GROUP（离开消费者组）"},
    "diagram.resp": {"en": "{api} {error}", "zh": "{api} {error}"},
    "diagram.note_preparing": {"en": "PreparingRebalance (generation {generation}): {reason}",
                               "zh": "PreparingRebalance（准备再平衡，generation {generation}）：{reason}"},
    "diagram.note_initial": {"en": "PreparingRebalance: initial rebalance, waits {delay} for more members",
                             "zh": "PreparingRebalance：首次再平衡，先等 {delay} 让更多成员加入"},
    "diagram.note_extended": {"en": "a member arrived: initial delay extended by {ms} ms",
                              "zh": "又有成员加入：初始等待延长 {ms} ms"},
    "diagram.note_completing": {"en": "CompletingRebalance: generation {generation}, protocol {protocol}, leader {leader}",
                                "zh": "CompletingRebalance：generation {generation}，分配策略 {protocol}，leader {leader}"},
    "diagram.note_empty": {"en": "Empty: generation {generation}", "zh": "Empty（组里没有成员）：generation {generation}"},
    "diagram.note_stable": {"en": "Stable: generation {generation}, assignment stored in __consumer_offsets",
                            "zh": "Stable：generation {generation}，分配方案已存入 __consumer_offsets"},
    "diagram.note_removed": {"en": "{member} removed: {reason}", "zh": "{member} 被移出：{reason}"},
    "diagram.note_assigned": {"en": "owns {partitions}", "zh": "持有 {partitions}"},
    "diagram.note_revoked": {"en": "revokes {partitions}", "zh": "撤销 {partitions}"},
    "diagram.note_crash": {"en": "crashes: no LEAVE_GROUP", "zh": "崩溃：不发 LEAVE_GROUP"},
    "diagram.note_static": {"en": "static member {instance}: {new} replaces {old}",
                            "zh": "静态成员 {instance}：{new} 取代 {old}"},
    "diagram.note_more": {"en": "... {n} more steps: narrow the window with --from/--to",
                          "zh": "……还有 {n} 步：用 --from/--to 缩小时间窗口"},
    "diagram.group_prefix": {"en": "group {group}: {text}", "zh": "消费者组 {group}：{text}"},
    "diagram.note_killed": {"en": "killed: no LEAVE_GROUP", "zh": "被杀掉：不发 LEAVE_GROUP"},
    # --- narration of the classic protocol from records and trace (kgroup run --narrate, kgroup serve --narrate) ---
    "diagram.cg_join": {"en": "ConsumerGroupHeartbeat epoch 0 (join), subscribe [{topics}]",
                        "zh": "ConsumerGroupHeartbeat epoch 0（加入），订阅 [{topics}]"},
    "diagram.cg_subscribe": {"en": "ConsumerGroupHeartbeat epoch {epoch}, subscribe [{topics}]",
                             "zh": "ConsumerGroupHeartbeat epoch {epoch}，订阅改为 [{topics}]"},
    "diagram.cg_heartbeat": {"en": "ConsumerGroupHeartbeat epoch {epoch}", "zh": "ConsumerGroupHeartbeat epoch {epoch}（心跳）"},
    "diagram.cg_resp": {"en": "epoch {epoch} {state}: {partitions}", "zh": "epoch {epoch} {state}：分配 {partitions}"},
    "diagram.cg_resp_revoke": {"en": "epoch {epoch} {state}: {partitions}, revoke {revoke} first",
                               "zh": "epoch {epoch} {state}：分配 {partitions}，先撤销 {revoke}"},
    "diagram.cg_note_epoch": {"en": "group epoch {epoch}", "zh": "group epoch 变为 {epoch}"},
    "diagram.cg_note_target": {"en": "target epoch {epoch} by {assignor}: {targets}",
                               "zh": "{assignor} 算出 epoch {epoch} 的目标分配：{targets}"},
    "diagram.cg_default_assignor": {"en": "the default assignor", "zh": "默认分区分配策略"},
    "diagram.cg_note_removed": {"en": "{member} removed (left or fenced)", "zh": "{member} 被移出（离开或被隔离）"},
    "diagram.cg_hb_owned": {"en": "ConsumerGroupHeartbeat epoch {epoch}, owns {owned}",
                            "zh": "ConsumerGroupHeartbeat epoch {epoch}，持有 {owned}（确认）"},
    "diagram.cg_hb_leave": {"en": "ConsumerGroupHeartbeat epoch -1 (leave)",
                            "zh": "ConsumerGroupHeartbeat epoch -1（离开消费者组）"},
    "diagram.cg_hb_epoch": {"en": "NONE, member epoch {epoch} (same partitions)",
                            "zh": "NONE，member epoch {epoch}（分区不变）"},
    "diagram.cg_hb_resp": {"en": "NONE, member epoch {epoch}: {partitions}", "zh": "NONE，member epoch {epoch}：分配 {partitions}"},
    "diagram.cg_note_deleted": {"en": "consumer group deleted", "zh": "消费者组被删除"},
    "narr.find_coordinator": {
        "en": "-> FIND_COORDINATOR key={group!r} (key_type 0 = group), answered by any broker: the coordinator is "
              "broker {node}",
        "zh": "-> FIND_COORDINATOR，coordinator_key={group!r}（coordinator_type 0 = 消费者组），任意 broker 都能回答："
              "协调者是 broker {node}",
    },
    "narr.coordinator_rule": {
        "en": "why broker {node}: Utils.abs({group!r}.hashCode() = {hash}) = {abs}; {abs} % "
              "offsets.topic.num.partitions ({n}) = {partition}; the leader of __consumer_offsets-{partition} is "
              "broker {node} (GroupCoordinator.partitionFor)",
        "zh": "为什么是 broker {node}：Utils.abs({group!r}.hashCode() = {hash}) = {abs}；{abs} % "
              "offsets.topic.num.partitions（{n}）= {partition}；__consumer_offsets-{partition} 的 leader 副本在 "
              "broker {node} 上（GroupCoordinator.partitionFor）",
    },
    "narr.coordinator_unknown": {
        "en": "marks the coordinator unknown ({reason}) and will look it up again",
        "zh": "把协调者标记为未知（{reason}），稍后重新查找",
    },
    "narr.start": {
        "en": "starts: group.id={group}, subscribes to [{topics}]",
        "zh": "启动：group.id={group}，订阅 [{topics}]",
    },
    "narr.join_send": {"en": "-> JOIN_GROUP {why}", "zh": "-> JOIN_GROUP{why}"},
    "narr.why.first": {
        "en": "(first join: member_id=\"\"; a dynamic member is answered MEMBER_ID_REQUIRED and joins again with the "
              "id it is given, KIP-394)",
        "zh": "（首次加入：member_id 为空字符串；动态成员会收到 MEMBER_ID_REQUIRED，再带上分到的 id 重新加入，KIP-394）",
    },
    "narr.why.rebalancing": {
        "en": "(its heartbeat was answered REBALANCE_IN_PROGRESS: the group is rebalancing, so it revokes and "
              "rejoins)",
        "zh": "（心跳收到 REBALANCE_IN_PROGRESS：组正在再平衡，于是先撤销分区再重新加入）",
    },
    "narr.why.metadata": {
        "en": "(the leader saw the metadata of the subscribed topics change: more partitions, or a topic newly "
              "subscribed)",
        "zh": "（leader 发现订阅主题的元数据变了：分区数增加，或者订阅了新的主题）",
    },
    "narr.why.subscription": {"en": "(its subscription changed)", "zh": "（它的订阅变了）"},
    "narr.why.revoke": {
        "en": "(cooperative protocol: it revoked the partitions that move and rejoins for the second round, KIP-429)",
        "zh": "（cooperative 协议：它撤销了要迁走的分区，为第二轮再平衡重新加入，KIP-429）",
    },
    "narr.why.other": {"en": "({reason})", "zh": "（{reason}）"},
    "narr.pending_added": {
        "en": "JoinGroup from {client} without a member id -> MEMBER_ID_REQUIRED with the new id {member} (KIP-394: "
              "join again with it)",
        "zh": "{client} 的 JoinGroup 没有 member_id -> 回复 MEMBER_ID_REQUIRED，给出新 id {member}（KIP-394：带着它"
              "重新加入）",
    },
    "narr.pending_removed": {"en": "pending member {member} dropped: {reason}",
                             "zh": "待加入的成员 {member} 被丢弃：{reason}"},
    "narr.member_joined": {
        "en": "{member} joined: session.timeout.ms={session}, rebalance_timeout (max.poll.interval.ms)={rebalance}, "
              "protocol_type={ptype}, group_protocols=[{protocols}], subscribes to [{topics}]; its JoinGroup is "
              "parked until the join phase completes",
        "zh": "{member} 加入：session.timeout.ms={session}，rebalance_timeout（即 max.poll.interval.ms）={rebalance}，"
              "protocol_type={ptype}，group_protocols=[{protocols}]，订阅 [{topics}]；它的 JoinGroup 先挂起，"
              "等加入阶段结束再统一响应",
    },
    "narr.static_member": {
        "en": "a static member: group.instance.id={instance} (KIP-345)",
        "zh": "这是静态成员：group.instance.id={instance}（KIP-345）",
    },
    "narr.member_rejoined": {
        "en": "{member} rejoined (JoinGroup with its member id, group_protocols=[{protocols}]); parked until the join "
              "phase completes",
        "zh": "{member} 重新加入（JoinGroup 带着自己的 member_id，group_protocols=[{protocols}]）；挂起，等加入阶段结束",
    },
    "narr.static_replaced": {
        "en": "static member {instance}: the new member id {new} replaces {old}, which is fenced from now on (KIP-345)",
        "zh": "静态成员 {instance}：新的 member_id {new} 取代 {old}，旧 id 从此被隔离（fenced，KIP-345）",
    },
    "narr.removed_leave": {"en": "{member} left the group (LeaveGroup: {reason})",
                           "zh": "{member} 离开了消费者组（LeaveGroup：{reason}）"},
    "narr.removed_session": {
        "en": "{member} removed: no heartbeat within session.timeout.ms ({session} ms)",
        "zh": "{member} 被移出：session.timeout.ms（{session} ms）内没有收到它的心跳",
    },
    "narr.removed_not_rejoined": {
        "en": "{member} removed: it did not rejoin before the join phase completed (rebalance timeout {timeout} ms)",
        "zh": "{member} 被移出：加入阶段结束前它没有重新加入（rebalance timeout {timeout} ms）",
    },
    "narr.removed_sync": {
        "en": "{member} removed: it never sent SyncGroup within the rebalance timeout (KAFKA-12890)",
        "zh": "{member} 被移出：在 rebalance timeout 内一直没有发 SyncGroup（KAFKA-12890）",
    },
    "narr.removed_other": {"en": "{member} removed: {reason}", "zh": "{member} 被移出：{reason}"},
    "narr.new_leader": {
        "en": "it was the leader: the coordinator picks another member as leader: {leader} (the first one in its "
              "member map's iteration order: effectively arbitrary)",
        "zh": "它原来是 leader 消费者：协调者另选 {leader} 作为 leader（取成员表遍历顺序里的第一个，相当于随意挑一个）",
    },
    "narr.rebalance_initial": {
        "en": "group {group} was Empty -> PreparingRebalance (generation {generation}): the first join waits "
              "group.initial.rebalance.delay.ms={delay} ms for more members before completing",
        "zh": "消费者组 {group} 原本是 Empty -> PreparingRebalance（generation {generation}）：第一次加入要先等 "
              "group.initial.rebalance.delay.ms={delay} ms，让更多成员赶上",
    },
    "narr.rebalance": {
        "en": "group {group}: {state} -> PreparingRebalance at generation {generation}: {reason}. The members learn "
              "it from their next heartbeat (REBALANCE_IN_PROGRESS) and must rejoin within the rebalance timeout "
              "({timeout} ms)",
        "zh": "消费者组 {group}：{state} -> PreparingRebalance，当前 generation {generation}：{reason}。成员们从下一次"
              "心跳（REBALANCE_IN_PROGRESS）得知再平衡开始，必须在 rebalance timeout（{timeout} ms）内重新加入",
    },
    "narr.rebalance_nobody": {
        "en": "group {group}: {state} -> PreparingRebalance at generation {generation}: {reason}. No member is left, "
              "so the join phase completes at once",
        "zh": "消费者组 {group}：{state} -> PreparingRebalance，当前 generation {generation}：{reason}。组里已经没有"
              "成员了，加入阶段立即结束",
    },
    "narr.initial_extended": {
        "en": "a member joined during the last {delay} ms: the initial delay is extended by another {delay} ms "
              "({remaining} ms left before the first member's rebalance timeout caps it)",
        "zh": "最近 {delay} ms 内又有成员加入：初始等待再延长 {delay} ms（离第一个成员的 rebalance timeout 上限还剩 "
              "{remaining} ms）",
    },
    "narr.join_complete": {
        "en": "join phase complete ({took} ms after the rebalance started): generation {generation}, "
              "CompletingRebalance, protocol {protocol!r}, leader {leader}; every parked JoinGroup is answered now: "
              "the leader gets the {n} members' subscriptions, the followers an empty member list",
        "zh": "加入阶段结束（再平衡开始后 {took} ms）：generation {generation}，进入 CompletingRebalance，分区分配策略 "
              "{protocol!r}，leader 消费者 {leader}；挂起的 JoinGroup 现在一起响应：只有 leader 拿到 {n} 个成员的订阅"
              "信息，其他成员的 members 列表是空的",
    },
    "narr.join_empty": {
        "en": "join phase completed with no member left: group {group} is Empty at generation {generation}",
        "zh": "加入阶段结束时一个成员也没剩：消费者组 {group} 变为 Empty，generation {generation}",
    },
    "narr.vote_header": {
        "en": "protocol vote (selectProtocol): candidates = the strategies every member supports: [{candidates}]",
        "zh": "分区分配策略投票（selectProtocol）：候选集 = 所有成员都支持的策略：[{candidates}]",
    },
    "narr.vote_member": {"en": "{member} lists [{protocols}] -> votes {vote!r}",
                         "zh": "{member} 的列表 [{protocols}] -> 投给 {vote!r}"},
    "narr.vote_result": {"en": "tally {tally} -> {protocol!r}", "zh": "计票 {tally} -> {protocol!r}"},
    "narr.leader_first": {
        "en": "{leader} leads: it was the first member to join the group",
        "zh": "{leader} 是 leader 消费者：它是第一个加入消费者组的成员",
    },
    "narr.leader_kept": {
        "en": "{leader} stays the leader (the leader only changes when it leaves the group)",
        "zh": "{leader} 继续当 leader（只有 leader 离开消费者组时才会换人）",
    },
    "narr.leader_new": {
        "en": "{leader} is the new leader (the old one left or did not rejoin)",
        "zh": "{leader} 成为新的 leader（原来的 leader 离开了，或者没有重新加入）",
    },
    "narr.joined_leader": {
        "en": "<- JOIN_GROUP: generation {generation}, protocol {protocol!r}; it is the LEADER: it runs "
              "the {protocol!r} assignor over the {n} members' subscriptions and sends the result in its SyncGroup",
        "zh": "<- JOIN_GROUP：generation {generation}，分区分配策略 {protocol!r}；它是 leader：用 "
              "{protocol!r} 策略根据 {n} 个成员的订阅计算分配方案，放进自己的 SyncGroup 里发出去",
    },
    "narr.joined_follower": {
        "en": "<- JOIN_GROUP: generation {generation}, protocol {protocol!r}; follower (leader {leader}): "
              "it sends an empty SyncGroup and waits for its share",
        "zh": "<- JOIN_GROUP：generation {generation}，分区分配策略 {protocol!r}；普通成员（leader 是 "
              "{leader}）：发一个空的 SyncGroup，等着拿自己那一份",
    },
    "narr.sync_leader": {
        "en": "leader {member} -> SYNC_GROUP (generation {generation}) with the assignment it computed with "
              "{protocol!r}",
        "zh": "leader {member} -> SYNC_GROUP（generation {generation}），带着它用 {protocol!r} 算出的分配方案",
    },
    "narr.sync_follower": {
        "en": "{member} -> SYNC_GROUP (generation {generation}) with an empty group_assignment: parked until the "
              "leader's arrives",
        "zh": "{member} -> SYNC_GROUP（generation {generation}），group_assignment 为空：挂起，等 leader 的方案到来",
    },
    "narr.sync_follower_stable": {
        "en": "{member} -> SYNC_GROUP (generation {generation}): the group is already Stable, answered at once with "
              "its assignment",
        "zh": "{member} -> SYNC_GROUP（generation {generation}）：组已经是 Stable，立刻返回它的分配方案",
    },
    "narr.stable": {
        "en": "stored the leader's assignment in __consumer_offsets-{partition} (GroupMetadata record) "
              "and answered every SyncGroup: group Stable at generation {generation}, {took} ms after the rebalance "
              "started:",
        "zh": "把 leader 的分配方案存进 __consumer_offsets-{partition}（GroupMetadata 记录），并响应所有 "
              "SyncGroup：组进入 Stable，generation {generation}，距再平衡开始 {took} ms：",
    },
    "narr.group_from_consumer_group": {
        "en": "classic group {group} rebuilt from the consumer group at generation {generation} (GroupMetadata "
              "record), Stable with the members' current partitions; a rebalance follows:",
        "zh": "从消费者组重建出经典消费者组 {group}，generation {generation}（写入 GroupMetadata 记录），状态 Stable，"
              "成员保留当前的分区；紧接着会触发一次再平衡：",
    },
    "narr.group_rewritten": {
        "en": "group metadata written again at generation {generation} (no rebalance):",
        "zh": "组元数据在 generation {generation} 重新写入（没有再平衡）：",
    },
    "narr.assignment": {"en": "{lead}{member} <- {partitions}", "zh": "{lead}{member} <- {partitions}"},
    "narr.group_created": {
        "en": "group {group} created (Empty, generation 0) by its first JoinGroup; its records go to "
              "__consumer_offsets-{partition}",
        "zh": "第一个 JoinGroup 创建了消费者组 {group}（Empty，generation 0）；它的记录都写进 "
              "__consumer_offsets-{partition}",
    },
    "narr.coordinator_loaded": {
        "en": "broker {broker} loaded __consumer_offsets-{partition} (leader epoch {epoch}) and now coordinates its "
              "groups",
        "zh": "broker {broker} 加载了 __consumer_offsets-{partition}（leader epoch {epoch}），从此由它协调这些消费者组",
    },
    "narr.offset_commit": {
        "en": "{group}: offsets committed to __consumer_offsets-{partition}: {offsets}",
        "zh": "{group}：消费位移提交到 __consumer_offsets-{partition}：{offsets}",
    },
    "narr.group_deleted": {"en": "group {group} deleted ({reason})", "zh": "消费者组 {group} 被删除（{reason}）"},
    "narr.offset_deleted": {"en": "{group}: offset of {topic}-{partition} deleted ({reason})",
                            "zh": "{group}：{topic}-{partition} 的消费位移被删除（{reason}）"},
    "narr.assigned": {
        "en": "<- SYNC_GROUP: generation {generation}, owns {owned}; onPartitionsAssigned({added})",
        "zh": "<- SYNC_GROUP：generation {generation}，持有 {owned}；onPartitionsAssigned({added})",
    },
    "narr.revoked": {"en": "onPartitionsRevoked({partitions})",
                     "zh": "onPartitionsRevoked({partitions})（交出这些分区）"},
    "narr.lost": {"en": "onPartitionsLost({partitions})",
                  "zh": "onPartitionsLost({partitions})（这些分区已经丢了）"},
    "narr.left": {"en": "-> LEAVE_GROUP ({reason})", "zh": "-> LEAVE_GROUP，离开消费者组（{reason}）"},
    "narr.reset": {"en": "resets its generation and member id ({reason})",
                   "zh": "重置自己的 generation 和 member_id（{reason}）"},
    "narr.stop": {"en": "close(): commit offsets, onPartitionsRevoked, LeaveGroup",
                  "zh": "close()：提交消费位移、onPartitionsRevoked、发送 LeaveGroup"},
    "narr.closed": {"en": "closed", "zh": "已关闭"},
    "narr.crash": {
        "en": "crashed: no LeaveGroup; the coordinator only notices when session.timeout.ms passes without a "
              "heartbeat",
        "zh": "崩溃：不会发 LeaveGroup；协调者要等 session.timeout.ms 内没有心跳才会发现",
    },
    "narr.crash_why": {
        "en": "crashed ({reason}): no LeaveGroup; the coordinator only notices when session.timeout.ms passes "
              "without a heartbeat",
        "zh": "崩溃（{reason}）：不会发 LeaveGroup；协调者要等 session.timeout.ms 内没有心跳才会发现",
    },
    "narr.crash_fatal": {
        "en": "its application stops: poll() threw the error (Kafka treats it as fatal, no retry)",
        "zh": "它的应用停止了：poll() 抛出了这个错误（Kafka 认为是致命错误，不会重试）",
    },
    "narr.restart_graceful": {"en": "restarts: close() now, back in {down} ms",
                              "zh": "重启：先 close()，{down} ms 后再启动"},
    "narr.restart_kill": {"en": "is killed and restarts in {down} ms",
                          "zh": "被杀掉，{down} ms 后重启"},
    "narr.gc_pause": {"en": "freezes (GC pause) until {until} ms: no heartbeat, no poll",
                      "zh": "卡住了（GC 停顿）直到 {until} ms：不发心跳，也不 poll"},
    "narr.resume": {"en": "runs again", "zh": "恢复运行"},
    "narr.broker_stop": {"en": "broker {broker} stops", "zh": "broker {broker} 停止"},
    "narr.broker_start": {"en": "broker {broker} starts", "zh": "broker {broker} 启动"},
    "narr.offsets_leader": {
        "en": "__consumer_offsets-{partition}: leader broker {old} -> {new}; broker {new} now coordinates {groups}",
        "zh": "__consumer_offsets-{partition}：leader 从 broker {old} 换成 {new}；从此由 broker {new} 协调 {groups}",
    },
    "narr.consumer_error": {"en": "fatal error {error}", "zh": "致命错误 {error}"},
    "narr.commit_failed": {"en": "offset commit failed ({error})",
                           "zh": "提交消费位移失败（{error}）"},
    "narr.violation": {"en": "invariant {invariant} violated: {message}", "zh": "不变量 {invariant} 被违反：{message}"},
    "narr.produce": {"en": "{count} record(s) to {topic} (partitioner: {partitioner})",
                     "zh": "向 {topic} 发送 {count} 条消息（分区器：{partitioner}）"},
    "narr.produce_key": {
        "en": "key {key!r}: murmur2 = {murmur}, toPositive = {positive}, {positive} % {n} = partition {partition}",
        "zh": "key {key!r}：murmur2 = {murmur}，toPositive = {positive}，{positive} % {n} = {partition} 号分区",
    },
    "narr.add_partitions": {
        "en": "topic {topic} grows to {partitions} partitions: consumers see it at their next metadata refresh; the "
              "leader then asks for a rebalance",
        "zh": "主题 {topic} 的分区数增加到 {partitions}：消费者在下一次刷新元数据时发现，leader 随即发起再平衡",
    },
    "narr.subscribe": {"en": "{target} now subscribes to [{topics}]", "zh": "{target} 改为订阅 [{topics}]"},
    "narr.slow": {"en": "becomes slow for {duration} ms ({poll_ms} ms per poll)",
                  "zh": "接下来 {duration} ms 变慢（每次 poll 要 {poll_ms} ms）"},
    "narr.fault": {"en": "fault: {action} ({detail})", "zh": "故障注入：{action}（{detail}）"},
    # --- KIP-848 consumer groups (group.protocol=consumer), from the ConsumerGroup* records: kgroup/narrate_cg.py
    "narr.cg.group_created": {
        "en": "consumer group {group} created (KIP-848, group.protocol=consumer) in __consumer_offsets-{partition}; "
              "a new group starts at group epoch 1 with an empty target assignment (KAFKA-20268)",
        "zh": "在 __consumer_offsets-{partition} 中创建了消费者组 {group}（KIP-848 新协议，group.protocol=consumer）；"
              "新建的消费者组从 group epoch 1 开始，目标分配为空（KAFKA-20268）",
    },
    "narr.cg.upgraded": {
        "en": "classic group {group} converted to a consumer group (online upgrade: a member with "
              "group.protocol=consumer joined; group.consumer.migration.policy); its members are carried over with "
              "their partitions, at a group epoch equal to the classic generation",
        "zh": "经典消费者组 {group} 在线升级为新协议的消费者组（有成员以 group.protocol=consumer 加入；"
              "group.consumer.migration.policy）；原有成员连同分区一起保留，group epoch 沿用经典协议的 generation",
    },
    "narr.cg.converted_member": {
        "en": "{member} carried over from the classic group (subscribes to [{topics}]): it keeps using "
              "JoinGroup/SyncGroup/Heartbeat, and the coordinator answers them with the new protocol's steps",
        "zh": "{member} 从经典消费者组保留下来（订阅 [{topics}]）：它继续使用 JoinGroup/SyncGroup/Heartbeat，协调者用新协议的"
              "步骤来应答",
    },
    "narr.cg.downgraded_member": {
        "en": "{member} (classic protocol) is carried back into the classic group",
        "zh": "{member}（经典协议成员）随消费者组一起转回经典消费者组",
    },
    "narr.cg.downgraded": {
        "en": "consumer group {group} converted back to a classic group (online downgrade: its last member using "
              "group.protocol=consumer left; group.consumer.migration.policy): the classic members must rejoin",
        "zh": "消费者组 {group} 在线降级回经典消费者组（最后一个使用 group.protocol=consumer 的成员离开了；"
              "group.consumer.migration.policy）：经典成员需要重新加入",
    },
    "narr.cg.member_joined": {
        "en": "ConsumerGroupHeartbeat from {client} with member epoch 0 = join: new member {member} subscribes to "
              "[{topics}], rebalance timeout {rebalance} ms, server assignor {assignor}",
        "zh": "{client} 发来 member epoch 为 0 的 ConsumerGroupHeartbeat，即申请加入：新成员 {member} 订阅 [{topics}]，"
              "再平衡超时 {rebalance} ms，服务端分区分配策略 {assignor}",
    },
    "narr.cg.assignor_default": {
        "en": "not chosen (group.remote.assignor unset: the coordinator's default, {default})",
        "zh": "未指定（没有设置 group.remote.assignor，用协调者的默认策略 {default}）",
    },
    "narr.cg.static_member": {
        "en": "static member: group.instance.id={instance} (a restart within the session timeout keeps its place)",
        "zh": "静态成员：group.instance.id={instance}（在会话超时内重启，仍保留原来的位置和分区）",
    },
    "narr.cg.classic_member": {
        "en": "a classic-protocol consumer (JoinGroup/SyncGroup) in a consumer group: the coordinator translates its "
              "requests into the new protocol's steps (KIP-848's mixed groups)",
        "zh": "这是一个使用经典协议（JoinGroup/SyncGroup）的消费者，加入的却是新协议的消费者组：协调者把它的请求翻译成"
              "新协议的步骤（KIP-848 的混合消费者组）",
    },
    "narr.cg.subscription_changed": {
        "en": "member {member} now subscribes to [{topics}]",
        "zh": "成员 {member} 的订阅改为 [{topics}]",
    },
    "narr.cg.why.joined": {"en": "{member} joined", "zh": "{member} 加入"},
    "narr.cg.why.left": {"en": "{member} left", "zh": "{member} 离开"},
    "narr.cg.why.subscription": {"en": "{member}'s subscription changed", "zh": "{member} 的订阅变了"},
    "narr.cg.why.assignor": {"en": "the members' preferred server assignor changed",
                             "zh": "成员偏好的服务端分区分配策略变了"},
    "narr.cg.why.metadata": {
        "en": "the subscribed topics' metadata changed (partitions added, a topic created or deleted)",
        "zh": "订阅主题的元数据变了（增加了分区，或者创建、删除了主题）",
    },
    "narr.cg.why.other": {"en": "the subscriptions or the topics' metadata changed",
                          "zh": "订阅或主题元数据发生了变化"},
    "narr.cg.epoch_bump": {
        "en": "group epoch {old} -> {new} ({why}): a new target assignment is due; the members keep consuming meanwhile",
        "zh": "group epoch {old} -> {new}（{why}）：需要计算新的目标分配；在此期间各成员照常消费，不用停下来",
    },
    "narr.cg.target": {
        "en": "target assignment for epoch {epoch}, computed by the coordinator itself with the server-side assignor "
              "{assignor!r} (group.consumer.assignors; no leader consumer, no SyncGroup); {changed} of {n} "
              "member(s) get a new target:",
        "zh": "协调者自己用服务端分区分配策略 {assignor!r} 算出了 epoch {epoch} 的目标分配（group.consumer.assignors；"
              "不再有 leader 消费者，也没有 SyncGroup）；{n} 个成员中有 {changed} 个的目标变了：",
    },
    "narr.cg.target_member": {"en": "  {member} -> {partitions}", "zh": "  {member} 的目标：{partitions}"},
    "narr.cg.target_empty": {
        "en": "the group is empty: the target assignment moves to epoch {epoch} with no members",
        "zh": "消费者组已空：目标分配推进到 epoch {epoch}，没有任何成员",
    },
    "narr.cg.stable": {
        "en": "member {member}: member epoch {old} -> {new}, STABLE: owns its whole target {owned}",
        "zh": "成员 {member}：member epoch {old} -> {new}，STABLE：已拥有全部目标分区 {owned}",
    },
    "narr.cg.stable_lagging": {
        "en": "member {member}: member epoch {old} -> {new}, STABLE with its part of the current target, {owned}: "
              "the target for group epoch {group_epoch} is not computed yet (at most one computation per "
              "group.consumer.assignment.interval.ms, KIP-1263)",
        "zh": "成员 {member}：member epoch {old} -> {new}，STABLE，先拿到当前目标分配中属于它的部分 {owned}：group epoch "
              "{group_epoch} 的目标分配还没有计算（每个 group.consumer.assignment.interval.ms 最多计算一次，KIP-1263）",
    },
    "narr.cg.unrevoked": {
        "en": "member {member} stays at member epoch {epoch} (UNREVOKED_PARTITIONS): it must first revoke "
              "{revoke}, now in other members' targets, and keeps {keep}; it reaches epoch {target} once a "
              "heartbeat shows them released, within its rebalance timeout ({rebalance} ms) -- revocation before "
              "assignment",
        "zh": "成员 {member} 停在 member epoch {epoch}（UNREVOKED_PARTITIONS）：必须先撤销 {revoke}（它们已经分给了其他成员），"
              "保留 {keep}；等它在心跳中表明已释放这些分区，才进入 epoch {target}，期限是再平衡超时 {rebalance} ms"
              "——先撤销，后分配",
    },
    "narr.cg.unreleased": {
        "en": "member {member}: member epoch {old} -> {new} (UNRELEASED_PARTITIONS): owns {owned}; waits for "
              "{waiting} until their current owners release them",
        "zh": "成员 {member}：member epoch {old} -> {new}（UNRELEASED_PARTITIONS）：持有 {owned}；{waiting} 还要等当前"
              "持有者释放后才能分给它",
    },
    "narr.cg.revocation_done": {
        "en": "member {member} revoked {revoked} (its heartbeat no longer owns them): member epoch {old} -> {new}, "
              "STABLE, owns {owned}",
        "zh": "成员 {member} 已撤销 {revoked}（心跳里不再上报这些分区）：member epoch {old} -> {new}，STABLE，持有 {owned}",
    },
    "narr.cg.received": {
        "en": "member {member} receives {added}, released by their previous owner: owns {owned}",
        "zh": "原持有者已释放 {added}，分给成员 {member}：现在持有 {owned}",
    },
    "narr.cg.member_removed": {
        "en": "member {member} {how}; its partitions {partitions} are free for the others",
        "zh": "成员 {member} {how}；它的分区 {partitions} 可以分给其他成员了",
    },
    "narr.cg.how.left": {"en": "left the group (ConsumerGroupHeartbeat with member epoch -1)",
                         "zh": "离开了消费者组（发送 member epoch 为 -1 的 ConsumerGroupHeartbeat）"},
    "narr.cg.how.left_static": {"en": "left (static member, member epoch -2)",
                                "zh": "离开了（静态成员，member epoch 为 -2）"},
    "narr.cg.how.left_classic": {"en": "left the group (LeaveGroup of a classic-protocol member)",
                                 "zh": "离开了消费者组（经典协议成员发送 LeaveGroup）"},
    "narr.cg.how.fenced_session": {
        "en": "was fenced: no heartbeat within the session timeout (group.consumer.session.timeout.ms)",
        "zh": "被隔离（fenced）：在会话超时（group.consumer.session.timeout.ms）内没有发送心跳",
    },
    "narr.cg.how.fenced_rebalance": {
        "en": "was fenced: it did not revoke its partitions within its rebalance timeout ({rebalance} ms)",
        "zh": "被隔离（fenced）：没有在再平衡超时（{rebalance} ms）内撤销分区",
    },
    "narr.cg.how.removed": {"en": "was removed from the group", "zh": "被移出了消费者组"},
    "narr.cg.static_left": {
        "en": "static member {member} left with member epoch -2: its partitions {partitions} stay assigned to it "
              "(nothing is reassigned) until the same group.instance.id rejoins or the session timeout expires",
        "zh": "静态成员 {member} 以 member epoch -2 离开：它的分区 {partitions} 仍然分配给它（不做重新分配），直到同一个 "
              "group.instance.id 重新加入，或者会话超时",
    },
    "narr.cg.group_deleted": {"en": "consumer group {group} deleted", "zh": "消费者组 {group} 被删除"},
    "narr.cg.regex": {"en": "subscription regex {regex!r} resolved to [{topics}]",
                      "zh": "订阅的正则表达式 {regex!r} 匹配到主题 [{topics}]"},
    "run.header": {
        "en": "scenario {name} (seed {seed}): the protocol steps, from its records and trace, in virtual time",
        "zh": "场景 {name}（seed {seed}）：按虚拟时间逐步讲解协议步骤（依据协调者的记录和模拟器的 trace）",
    },
    "run.group": {
        "en": "group {group}: {consumers}; partition.assignment.strategy={strategy}",
        "zh": "消费者组 {group}：{consumers}；分区分配策略 partition.assignment.strategy={strategy}",
    },
    "run.end": {"en": "end of the narration; the run's summary:", "zh": "讲解结束；下面是这次运行的总结："},
    # --- kgroup serve --narrate ---------------------------------------------------------------------------------------
    "serve.narrating": {
        "en": "narrating every group's protocol steps from the coordinator's records and answers (--lang {lang}); "
              "times are seconds since the server started",
        "zh": "讲解每个消费者组的协议步骤（依据协调者的记录和响应，--lang {lang}）；时间是服务启动后的秒数",
    },
    "serve.found": {
        "en": "FIND_COORDINATOR for {key!r} answered: broker {node} ({host}:{port})",
        "zh": "FIND_COORDINATOR {key!r} 的响应：broker {node}（{host}:{port}）",
    },
    "serve.join_leader": {
        "en": "<- JOIN_GROUP to {member}: generation {generation}, protocol {protocol!r}; you are the LEADER, here "
              "are the {n} members' subscriptions: run the assignor",
        "zh": "<- JOIN_GROUP 发给 {member}：generation {generation}，分区分配策略 {protocol!r}；你是 leader，附上 {n} "
              "个成员的订阅信息：请执行分区分配",
    },
    "serve.join_follower": {
        "en": "<- JOIN_GROUP to {member}: generation {generation}, protocol {protocol!r}; follower of {leader}",
        "zh": "<- JOIN_GROUP 发给 {member}：generation {generation}，分区分配策略 {protocol!r}；普通成员，leader 是 "
              "{leader}",
    },
    "serve.join_consumer_group": {
        "en": "<- JOIN_GROUP to {member}: generation {generation} (its member epoch), protocol {protocol!r}; no "
              "leader and no subscriptions to assign: in a consumer group the coordinator computes the assignment "
              "and the member's SYNC_GROUP only fetches its part",
        "zh": "<- JOIN_GROUP 发给 {member}：generation {generation}（即它的 member epoch），分区分配策略 {protocol!r}；"
              "没有 leader，也不附订阅信息：在新协议的消费者组里由协调者计算分配，这个成员的 SYNC_GROUP 只是取回属于它的那一份",
    },
    "serve.cg_heartbeat": {
        "en": "<- ConsumerGroupHeartbeat to {member}: member epoch {epoch}, assignment {partitions}; heartbeat "
              "every {interval} ms",
        "zh": "<- ConsumerGroupHeartbeat 响应 {member}：member epoch {epoch}，分配 {partitions}；每 {interval} ms "
              "发一次心跳",
    },
    "serve.cg_error": {
        "en": "<- ConsumerGroupHeartbeat to {member}: error {error} ({message})",
        "zh": "<- ConsumerGroupHeartbeat 响应 {member}：错误 {error}（{message}）",
    },
}


def placeholders(template: str) -> set[str]:
    """The field names a template takes (``{a!r:>3}`` -> ``a``)."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template)
            if name is not None and name != ""}


class Catalogue:
    """``Catalogue(lang)(key, **values)``: the sentence ``key`` in ``lang`` with ``values`` filled in."""

    def __init__(self, lang: str = DEFAULT_LANG) -> None:
        if lang not in LANGS:
            raise ValueError(f"unknown language {lang!r} (choose from {', '.join(LANGS)})")
        self.lang = lang

    def __call__(self, message: str, /, **values) -> str:
        return MESSAGES[message][self.lang].format(**values)


def display_width(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def pad(text: str, width: int) -> str:
    """``text`` left-aligned in ``width`` terminal columns (``str.ljust`` counts characters, not columns)."""
    return text + " " * max(0, width - display_width(text))


def pad_left(text: str, width: int) -> str:
    """``text`` right-aligned in ``width`` terminal columns."""
    return " " * max(0, width - display_width(text)) + text
