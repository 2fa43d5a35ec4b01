#include "outboxd/worker/worker_registry.hpp"

#include <algorithm>

namespace outboxd::worker {
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

bool labelled_in(const WorkerEntry& worker, const std::vector<std::string>& labels) {
    return worker.hello.node && contains(labels, *worker.hello.node);
}

}  // namespace

bool WorkerEntry::serves(const std::string& ns) const { return contains(hello.namespaces, ns); }

bool WorkerEntry::runs(const std::string& activity_type) const {
    return contains(hello.activity_types, activity_type);
}

WorkerEntry& WorkerRegistry::add(std::string session_id, protocol::Hello hello,
                                 std::shared_ptr<WorkerChannel> channel) {
    WorkerEntry entry;
    entry.session_id = session_id;
    entry.credit = hello.max_in_flight;
    entry.hello = std::move(hello);
    entry.channel = std::move(channel);
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
    for (auto& [id, worker] : workers_) worker.retired = true;
}

bool WorkerRegistry::labelled_worker_up(const std::string& ns,
                                        const std::vector<std::string>& labels) const {
    return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
        return !entry.second.retired && entry.second.serves(ns) && labelled_in(entry.second, labels);
    });
}

bool WorkerRegistry::takes_unpinned(const WorkerEntry& worker, const std::string& ns,
                                    const Placement& placement) const {
    switch (placement.mode) {
        case PlacementMode::unplaced: return true;
        case PlacementMode::pinned: return labelled_in(worker, placement.nodes);
        case PlacementMode::prefer:
            // Soft: the preferred workers take unpinned rows while any of them is up; the
            // rest spill in only when none is.
            return labelled_in(worker, placement.nodes) ||
                   !labelled_worker_up(ns, placement.nodes);
    }
    return true;
}

std::vector<Route> WorkerRegistry::routes(const PlacementLookup& placement) const {
    std::map<std::tuple<std::string, std::string, std::optional<std::string>,
                        std::vector<std::string>, bool>,
             std::int32_t>
        capacity;
    std::map<std::string, Placement> placements;
    for (const auto& [id, worker] : workers_) {
        const std::int32_t free = worker.free_credit();
        if (free <= 0) continue;
        const auto shares = static_cast<std::int32_t>(worker.hello.namespaces.size());
        auto types = worker.hello.activity_types;
        std::sort(types.begin(), types.end());
        for (std::int32_t i = 0; i < shares; ++i) {
            const auto& ns = worker.hello.namespaces[static_cast<std::size_t>(i)];
            const std::int32_t share = free / shares + (i < free % shares ? 1 : 0);
            if (share == 0) continue;
            auto found = placements.find(ns);
            if (found == placements.end()) found = placements.emplace(ns, placement(ns)).first;
            const bool unpinned = takes_unpinned(worker, ns, found->second);
            if (!unpinned && !worker.hello.node) continue;  // nothing this worker may run
            capacity[{ns, worker.hello.task_queue, worker.hello.node, types, unpinned}] += share;
        }
    }
    std::vector<Route> routes;
    routes.reserve(capacity.size());
    for (const auto& [key, free] : capacity) {
        const auto& [ns, queue, node, types, unpinned] = key;
        store::ClaimScope scope{ns, queue, node, types};
        scope.include_unpinned = unpinned;
        routes.push_back({std::move(scope), free});
    }
    return routes;
}

WorkerEntry* WorkerRegistry::pick(const store::OutboxRow& row, const Placement& placement) {
    WorkerEntry* best = nullptr;
    for (auto& [id, worker] : workers_) {
        if (worker.free_credit() <= 0 || !worker.serves(row.namespace_name) ||
            worker.hello.task_queue != row.task_queue || !worker.runs(row.activity_type)) {
            continue;
        }
        // A row's own node always wins over the namespace's placement.
        const bool eligible = row.node ? worker.hello.node == row.node
                                       : takes_unpinned(worker, row.namespace_name, placement);
        if (!eligible) continue;
        // Least loaded relative to its window: outstanding/credit, compared exactly.
        if (!best || static_cast<std::int64_t>(worker.outstanding) * best->credit <
                         static_cast<std::int64_t>(best->outstanding) * worker.credit) {
            best = &worker;
        }
    }
    return best;
}

}  // namespace outboxd::worker
