#include "outboxd/worker/worker_registry.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <tuple>
#include <utility>

namespace outboxd::worker {
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

bool labelled_in(const WorkerEntry& worker, const std::vector<std::string>& labels) {
    return worker.profile.node && contains(labels, *worker.profile.node);
}

}  // namespace

bool WorkerEntry::serves(const std::string& ns) const { return namespaces_.contains(ns); }

bool WorkerEntry::runs(const std::string& activity_type) const {
    return types_.empty() || types_.contains(activity_type);  // none listed: any (a target)
}

WorkerEntry& WorkerRegistry::add(std::string session_id, sinks::SinkProfile profile,
                                 std::shared_ptr<sinks::Sink> sink) {
    WorkerEntry entry;
    entry.session_id = session_id;
    entry.credit_ = std::max(0, profile.credit);
    entry.namespaces_.insert(profile.namespaces.begin(), profile.namespaces.end());
    entry.types_.insert(profile.activity_types.begin(), profile.activity_types.end());
    if (profile.database) {
        const auto it = std::find(databases_.begin(), databases_.end(), *profile.database);
        entry.only_db_ = static_cast<std::size_t>(it - databases_.begin());  // end: none's
    }
    entry.profile = std::move(profile);
    entry.sink = std::move(sink);
    return workers_.insert_or_assign(std::move(session_id), std::move(entry)).first->second;
}

void WorkerRegistry::remove(const std::string& session_id) { workers_.erase(session_id); }

WorkerEntry* WorkerRegistry::find(const std::string& session_id) {
    const auto it = workers_.find(session_id);
    return it == workers_.end() ? nullptr : &it->second;
}

void WorkerRegistry::for_each(const std::function<void(WorkerEntry&)>& visit) {
    for (auto& [id, worker] : workers_) visit(worker);
}

void WorkerRegistry::retire_all() {
    for (auto& [id, worker] : workers_) worker.retired_ = true;
}

void WorkerRegistry::set_databases(std::vector<std::string> names) {
    if (names.empty()) names.emplace_back("default");
    wanting_.assign(names.size(), Want::none);
    sharing_count_ = 0;
    looking_count_ = 0;
    databases_ = std::move(names);
}

void WorkerRegistry::want(std::size_t db, Want want) {
    if (db >= wanting_.size() || wanting_[db] == want) return;
    const auto count = [this](Want w) -> std::size_t* {
        if (w == Want::share) return &sharing_count_;
        if (w == Want::look) return &looking_count_;
        return nullptr;
    };
    if (auto* was = count(wanting_[db])) --*was;
    if (auto* now = count(want)) ++*now;
    wanting_[db] = want;
}

std::int32_t WorkerRegistry::free_for(const WorkerEntry& worker, std::size_t db) const {
    auto free = worker.free_credit();
    if (free <= 0) return free;
    const auto mine = wanted(db);
    // A database with a share to take leaves one credit to each database looking.
    if (mine == Want::share) {
        free = std::max<std::int32_t>(0, free - static_cast<std::int32_t>(looking_count_));
    }
    // Alone (or the only one with a share to take), a database may use the whole window.
    const auto sharing = sharing_count_ + (mine == Want::share ? 0 : 1);
    if (sharing <= 1 || free <= 0) return free;
    // Its rank among the databases sharing, turned so that the remainder goes round.
    std::size_t rank = 0;
    for (std::size_t other = 0; other < db; ++other) rank += wanted(other) == Want::share ? 1 : 0;
    rank = (rank + turn_) % sharing;
    const auto count = static_cast<std::int32_t>(sharing);
    const auto share =
        worker.credit_ / count + (std::cmp_less(rank, worker.credit_ % count) ? 1 : 0);
    return std::clamp(share - worker.held(db), 0, free);
}

bool WorkerRegistry::reserve(WorkerEntry& worker, std::size_t db) {
    if (worker.free_credit() <= 0) return false;
    ++worker.outstanding_;
    if (worker.held_.size() <= db) worker.held_.resize(db + 1, 0);
    ++worker.held_[db];
    return true;
}

void WorkerRegistry::release(const std::string& session_id, std::size_t db) {
    auto* worker = find(session_id);
    if (!worker || worker->outstanding_ <= 0) return;
    --worker->outstanding_;
    if (db < worker->held_.size() && worker->held_[db] > 0) --worker->held_[db];
    // Others wait for this credit: turn the remainders, and let them claim.
    if (sharing_count_ + looking_count_ > (wants(db) ? 1 : 0)) {
        ++turn_;
        if (freed_) freed_(db);
    }
}

void WorkerRegistry::set_credit(const std::string& session_id, std::int32_t credit) {
    if (auto* worker = find(session_id)) worker->credit_ = std::max(0, credit);
}

bool WorkerRegistry::labelled_worker_up(const std::string& ns, const std::string& task_queue,
                                        const std::string& activity_type,
                                        const std::vector<std::string>& labels) const {
    return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
        const auto& worker = entry.second;
        return !worker.retired_ && worker.serves(ns) && worker.profile.task_queue == task_queue &&
               worker.runs(activity_type) && labelled_in(worker, labels);
    });
}

bool WorkerRegistry::takes_unpinned(const WorkerEntry& worker, const store::OutboxRow& row,
                                    const store::Placement& placement) const {
    switch (placement.mode) {
        case store::PlacementMode::unplaced:
            return true;
        case store::PlacementMode::pinned:
            return labelled_in(worker, placement.nodes);
        case store::PlacementMode::prefer:
            // Soft: the preferred workers take unpinned rows while any of them is up and able
            // to run the row; the rest spill in only when none is.
            return labelled_in(worker, placement.nodes) ||
                   !labelled_worker_up(row.namespace_name, row.task_queue, row.activity_type,
                                       placement.nodes);
    }
    return true;
}

std::vector<std::string> WorkerRegistry::unpinned_types(const WorkerEntry& worker,
                                                        const std::string& ns,
                                                        const store::Placement& placement) const {
    std::vector<std::string> types;
    for (const auto& type : worker.profile.activity_types) {
        const bool free =
            placement.mode == store::PlacementMode::unplaced ||
            labelled_in(worker, placement.nodes) ||
            (placement.mode == store::PlacementMode::prefer &&
             !labelled_worker_up(ns, worker.profile.task_queue, type, placement.nodes));
        if (free) types.push_back(type);
    }
    std::sort(types.begin(), types.end());
    return types;
}

std::vector<Route> WorkerRegistry::routes(const PlacementLookup& placement, std::size_t db) const {
    using Key = std::tuple<std::string, std::string, std::optional<std::string>,
                           std::vector<std::string>, bool>;
    std::map<Key, std::vector<CreditPool>> pools;
    std::map<std::string, store::Placement> placements;
    std::uint32_t next_pool = 0;
    for (const auto& [id, worker] : workers_) {
        const CreditPool pool{next_pool++, free_for(worker, db)};
        if (pool.free <= 0 || !worker.takes_from(db)) continue;
        auto types = worker.profile.activity_types;
        std::sort(types.begin(), types.end());
        for (const auto& ns : worker.profile.namespaces) {
            auto found = placements.find(ns);
            if (found == placements.end()) found = placements.emplace(ns, placement(ns)).first;
            const auto& queue = worker.profile.task_queue;
            const auto& node = worker.profile.node;
            if (types.empty()) {
                // Any type (a target that lists none): unpinned rows only where the
                // namespace's placement lets this worker take every type of them.
                const auto& placed = found->second;
                if (placed.mode == store::PlacementMode::unplaced ||
                    labelled_in(worker, placed.nodes)) {
                    pools[{ns, queue, node, types, true}].push_back(pool);
                } else if (node) {
                    pools[{ns, queue, node, types, false}].push_back(pool);
                }
                continue;
            }
            const auto open = unpinned_types(worker, ns, found->second);
            if (open == types) {
                pools[{ns, queue, node, types, true}].push_back(pool);
                continue;
            }
            // Rows pinned to this worker's label stay in scope for every type it runs: the
            // scope splits in two, both drawing on the worker's one pool.
            std::vector<std::string> reserved;  // types preferred workers take unpinned
            std::set_difference(types.begin(), types.end(), open.begin(), open.end(),
                                std::back_inserter(reserved));
            if (!open.empty()) pools[{ns, queue, node, open, true}].push_back(pool);
            if (node) pools[{ns, queue, node, reserved, false}].push_back(pool);
        }
    }
    std::vector<Route> routes;
    routes.reserve(pools.size());
    for (auto& [key, drawn] : pools) {
        const auto& [ns, queue, node, types, unpinned] = key;
        store::ClaimScope scope{ns, queue, node, types};
        scope.include_unpinned = unpinned;
        std::int64_t capacity = 0;
        for (const auto& pool : drawn) capacity += pool.free;
        routes.push_back({std::move(scope),
                          static_cast<std::int32_t>(std::min<std::int64_t>(
                              capacity, std::numeric_limits<std::int32_t>::max())),
                          std::move(drawn)});
    }
    return routes;
}

WorkerEntry* WorkerRegistry::pick(const store::OutboxRow& row, const store::Placement& placement,
                                  std::size_t db) {
    if (sharing_count_ + looking_count_ == 0 || wanting_.size() <= 1) {
        return pick_within(row, placement, db, false);
    }
    // Within the database's share first; a row claimed before the shares changed still goes
    // where credit is free rather than back to the table.
    if (auto* worker = pick_within(row, placement, db, true)) return worker;
    return pick_within(row, placement, db, false);
}

WorkerEntry* WorkerRegistry::pick_within(const store::OutboxRow& row,
                                         const store::Placement& placement, std::size_t db,
                                         bool share_only) {
    WorkerEntry* best = nullptr;
    for (auto& [id, worker] : workers_) {
        const auto free = share_only ? free_for(worker, db) : worker.free_credit();
        if (free <= 0 || !worker.takes_from(db) || !worker.serves(row.namespace_name) ||
            worker.profile.task_queue != row.task_queue || !worker.runs(row.activity_type)) {
            continue;
        }
        // A row's own node always wins over the namespace's placement.
        const bool eligible =
            row.node ? worker.profile.node == row.node : takes_unpinned(worker, row, placement);
        if (!eligible) continue;
        // Least loaded relative to its window: outstanding/credit, compared exactly.
        if (!best || static_cast<std::int64_t>(worker.outstanding_) * best->credit_ <
                         static_cast<std::int64_t>(best->outstanding_) * worker.credit_) {
            best = &worker;
        }
    }
    return best;
}

}  // namespace outboxd::worker
