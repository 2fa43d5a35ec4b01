#include "outboxd/sinks/targets/targets.hpp"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::targets {
namespace {

constexpr std::int64_t kTotalShards = 1024;

// What dispatch sees of a target: a sink of its route that takes no node label, whose
// tasks time out by the target's own timeout.
sinks::SinkProfile profile_of(const store::TargetSettings& target, std::int32_t share,
                              std::chrono::milliseconds deadline_grace,
                              std::optional<std::string> database) {
    sinks::SinkProfile profile;
    profile.database = std::move(database);
    profile.name = target.kind + "-target:" + target.name;
    profile.namespaces = {target.namespace_name};
    profile.task_queue = target.task_queue;
    profile.activity_types = target.activity_types;
    profile.credit = share;
    profile.task_timeout = std::chrono::milliseconds{target.timeout_ms};
    profile.deadline_grace = deadline_grace;
    return profile;
}

// Settings that change only the share keep the sink; any other change (kind, URL, route,
// secret, headers, TLS, timeout, options) takes a new one.
bool same_but_capacity(store::TargetSettings a, store::TargetSettings b) {
    a.max_in_flight = b.max_in_flight = 0;
    return a == b;
}

}  // namespace

std::int32_t node_share(std::int32_t max_in_flight, const ShardCounts& owned, const std::string& me,
                        std::int64_t total) {
    const auto mine = owned.find(me);
    if (mine == owned.end() || mine->second <= 0 || max_in_flight <= 0 || total <= 0) return 0;
    std::int64_t assigned = 0;
    for (const auto& [node, count] : owned) assigned += std::max<std::int64_t>(count, 0);
    assigned = std::min(assigned, total);
    const std::int64_t seats = std::int64_t{max_in_flight} * assigned / total;
    // Whole parts first, then one more to the largest remainders (exact: remainders are
    // compared as max_in_flight × count mod total).
    struct Part {
        std::int64_t remainder;
        std::string node;
    };
    std::vector<Part> parts;
    std::int64_t given = 0, floor_mine = 0;
    for (const auto& [node, count] : owned) {
        if (count <= 0) continue;
        const auto quota = std::int64_t{max_in_flight} * std::min(count, total);
        given += quota / total;
        if (node == me) floor_mine = quota / total;
        parts.push_back({quota % total, node});
    }
    std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
        return a.remainder != b.remainder ? a.remainder > b.remainder : a.node < b.node;
    });
    const auto extra = std::max<std::int64_t>(0, seats - given);
    std::int64_t share = floor_mine;
    for (std::int64_t i = 0; i < extra && i < static_cast<std::int64_t>(parts.size()); ++i) {
        if (parts[static_cast<std::size_t>(i)].node == me) ++share;
    }
    return static_cast<std::int32_t>(std::max<std::int64_t>(1, share));
}

Targets::Targets(boost::asio::any_io_executor loop, store::AdminLane& lane, sinks::SinkPort& port,
                 metrics::NodeMetrics& metrics, TargetsSettings settings, WallClock wall_clock)
    : loop_(std::move(loop)),
      lane_(lane),
      port_(port),
      metrics_(metrics),
      settings_(std::move(settings)),
      wall_clock_(std::move(wall_clock)),
      timer_(loop_) {}

Targets::~Targets() { stop(); }

void Targets::start() {
    stopped_ = false;
    refresh_now();
    schedule();
}

void Targets::stop() {
    stopped_ = true;
    timer_.cancel();
    // Requests still out end as failures, answered to dispatch before the entries go.
    for (auto& [name, entry] : active_) entry.channel->close("node stopping");
    for (auto& entry : retired_) entry.channel->close("node stopping");
}

void Targets::schedule() {
    timer_.expires_after(std::max(settings_.refresh, std::chrono::milliseconds{50}));
    timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired() || stopped_) return;
        refresh_now();
        schedule();
    });
}

std::vector<store::TargetReport> Targets::take_reports() {
    auto reports = std::exchange(unsent_reports_, {});
    const auto collect = [&reports](Entry& entry) {
        auto report = entry.channel->take_report();
        if (report.error || report.succeeded) reports.push_back(std::move(report));
    };
    for (auto& [name, entry] : active_) collect(entry);
    for (auto& entry : retired_) collect(entry);
    return reports;
}

void Targets::refresh_now() {
    if (stopped_) return;
    auto reports = take_reports();
    // Periodic: when the lane is full, the reports wait for the next refresh.
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [reports](store::AdminStores& db) {
            db.targets.report(reports);
            return db.targets.list();
        },
        [this, reports](const store::LaneResult<std::vector<store::TargetRecord>>& listed) {
            if (!listed.ok()) {
                // Keep serving the targets known; send the reports with the next refresh.
                unsent_reports_.insert(unsent_reports_.begin(), reports.begin(), reports.end());
                const auto now = std::chrono::steady_clock::now();
                if (failures_.failed(now)) {
                    spdlog::warn(
                        "event=targets_refresh_failed database={} failures={} error=\"{}\"",
                        database(), failures_.failures(), util::log_safe(listed.error));
                }
                return;
            }
            if (const auto failed = failures_.succeeded(); failed > 0) {
                spdlog::info("event=targets_refresh_recovered database={} failures={}", database(),
                             failed);
            }
            if (!stopped_) apply(listed.value);
        });
    if (!queued) unsent_reports_.insert(unsent_reports_.end(), reports.begin(), reports.end());
}

void Targets::apply(const std::vector<store::TargetRecord>& records) {
    std::map<std::string, const store::TargetSettings*> wanted;
    std::map<std::string, std::string> refused;
    std::set<std::string> undecryptable;
    for (const auto& record : records) {
        const auto& target = record.settings;
        // Its secrets hold what the database holds, not what the target needs: this node
        // lacks their key, or they were altered. Only this target fails.
        if (record.secrets.problem) {
            refused[target.name] = "cannot decrypt its secrets: " + *record.secrets.problem;
            undecryptable.insert(target.name);
            continue;
        }
        // Checked again: the row may have been written by plain SQL, or before this node's
        // allow-list changed.
        if (const auto problem = targets::check_target(target, settings_.policy)) {
            refused[target.name] = problem->message;
            continue;
        }
        wanted[target.name] = &target;
    }
    for (const auto& [name, why] : refused) {
        const auto known = refused_.find(name);
        if (known == refused_.end() || known->second != why) {
            spdlog::warn("event=target_refused database={} target=\"{}\" reason=\"{}\"", database(),
                         util::log_safe(name), util::log_safe(why));
            // A key missing here is this node's to fix: say so where every node's GET sees it.
            if (undecryptable.contains(name)) {
                unsent_reports_.push_back({name, "node cannot use the target: " + why, false});
            }
        }
    }
    refused_ = std::move(refused);

    for (auto it = active_.begin(); it != active_.end();) {
        const auto found = wanted.find(it->first);
        if (found == wanted.end()) {
            spdlog::info("event=target_removed database={} target=\"{}\"", database(),
                         util::log_safe(it->first));
            retire(std::move(it->second));
            it = active_.erase(it);
            continue;
        }
        auto& entry = it->second;
        if (!(entry.settings == *found->second)) {
            if (same_but_capacity(entry.settings, *found->second)) {
                entry.settings = *found->second;
                set_credit(entry);
            } else {
                spdlog::info("event=target_changed database={} target=\"{}\"", database(),
                             util::log_safe(it->first));
                retire(std::move(entry));
                it = active_.erase(it);
                continue;  // added below, as new
            }
        }
        ++it;
    }
    for (const auto& [name, target] : wanted) {
        if (!active_.contains(name)) add(*target);
    }
    reap_retired();
}

void Targets::add(const store::TargetSettings& target) {
    const auto* kind = find_kind(target.kind);
    if (kind == nullptr) return;  // check_target passed, so never
    const auto refuse = [&](const std::string& why) {
        if (refused_[target.name] != why) {
            spdlog::warn("event=target_refused database={} target=\"{}\" reason=\"{}\"", database(),
                         util::log_safe(target.name), util::log_safe(why));
        }
        refused_[target.name] = why;
        unsent_reports_.push_back({target.name, "node cannot use the target: " + why, false});
    };
    Entry entry;
    // Unique across the node's databases, whose targets may share a name.
    entry.session_id = target.kind + ":" + target.name +
                       (settings_.database ? "@" + *settings_.database : "") + "#" +
                       std::to_string(++generation_);
    entry.settings = target;
    Answers answers;
    const auto session = entry.session_id;
    answers.done = [this, session, watch = lifetime_.watch()](const std::string& task_id,
                                                              std::optional<std::string> result) {
        if (watch.expired()) return;
        (void)port_.complete(session, task_id, std::move(result).value_or("null"));
        reap_retired();
    };
    answers.failed = [this, session, watch = lifetime_.watch()](
                         const std::string& task_id, std::string error, bool retryable,
                         std::chrono::milliseconds min_delay) {
        if (watch.expired()) return;
        (void)port_.fail(session, task_id, std::move(error), retryable, min_delay);
        reap_retired();
    };
    const auto ready = [this, name = target.name, session, watch = lifetime_.watch()](bool now) {
        if (watch.expired()) return;
        const auto it = active_.find(name);
        if (it == active_.end() || it->second.session_id != session || it->second.ready == now) {
            return;
        }
        it->second.ready = now;
        set_credit(it->second);
    };
    try {
        entry.channel =
            kind->open(target, ChannelContext{loop_, settings_.policy, metrics_, database(),
                                              std::move(answers), settings_.max_response_bytes,
                                              settings_.max_result_bytes, wall_clock_, ready});
    } catch (const std::exception& error) {
        refuse(util::sanitize_text(error.what(), 300));
        return;
    }
    // A broker not reached yet takes nothing until its channel says it is ready.
    entry.ready = entry.channel->connected();
    const auto share = share_of(target);
    spdlog::info(
        "event=target_added database={} target=\"{}\" kind={} namespace=\"{}\" "
        "task_queue=\"{}\" url=\"{}\" share={}",
        database(), util::log_safe(target.name), target.kind, util::log_safe(target.namespace_name),
        util::log_safe(target.task_queue), util::log_safe(kind->shown_url(target.url)),
        std::max(0, share));
    const auto session_id = entry.session_id;
    auto channel = entry.channel;
    const bool ready_now = entry.ready;
    active_.emplace(target.name, std::move(entry));
    port_.attach(
        session_id,
        profile_of(target, ready_now ? share : 0, settings_.deadline_grace, settings_.database),
        std::move(channel));
}

std::int32_t Targets::share_of(const store::TargetSettings& target) const {
    return node_share(target.max_in_flight, owned_, me_, kTotalShards);
}

void Targets::set_credit(const Entry& entry) {
    port_.set_credit(entry.session_id, entry.ready ? share_of(entry.settings) : 0);
}

void Targets::cluster_changed(const ShardCounts& owned, const std::string& me) {
    if (owned == owned_ && me == me_) return;
    owned_ = owned;
    me_ = me;
    for (const auto& [name, entry] : active_) set_credit(entry);
}

void Targets::retire(Entry entry) {
    // No new tasks; the requests out finish and are answered under this sink.
    port_.set_credit(entry.session_id, 0);
    retired_.push_back(std::move(entry));
}

void Targets::reap_retired() {
    std::erase_if(retired_, [this](Entry& entry) {
        if (entry.channel->in_flight() > 0) return false;
        entry.channel->close("target retired");
        port_.detach(entry.session_id);  // nothing outstanding: only leaves
        return true;
    });
}

std::optional<TargetState> Targets::state(const std::string& name) const {
    TargetState state;
    if (const auto it = refused_.find(name); it != refused_.end()) state.refused = it->second;
    const auto it = active_.find(name);
    if (it == active_.end()) {
        if (!state.refused) return std::nullopt;
        return state;
    }
    state.share = share_of(it->second.settings);
    state.in_flight = static_cast<std::int32_t>(it->second.channel->in_flight());
    state.last_error = it->second.channel->last_error();
    state.connected = it->second.channel->connected();
    return state;
}

TargetStates Targets::states() const {
    TargetStates out;
    for (const auto& [name, entry] : active_) out[name] = *state(name);
    for (const auto& [name, why] : refused_) out[name] = *state(name);
    return out;
}

}  // namespace outboxd::sinks::targets
