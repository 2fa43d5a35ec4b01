#pragma once

// Connected worker sessions, their credit windows, and the routing decisions built on
// them: which claim scopes have free capacity, and which worker runs a claimed row.
//
// Thread affinity: the node's loop thread only. No I/O: sessions reach their sockets
// through WorkerChannel.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/worker/placement.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::worker {

// The registry's handle on one connection (implemented by the WebSocket session, or by an
// in-memory channel in tests).
class WorkerChannel {
public:
    virtual ~WorkerChannel() = default;
    // Queues one text frame.
    virtual void send(std::string frame) = 0;
    // Closes the connection; the session reports the loss itself.
    virtual void close(std::string_view reason) = 0;
};

struct WorkerEntry {
    std::string session_id;
    protocol::Hello hello;
    std::shared_ptr<WorkerChannel> channel;
    std::int32_t credit = 0;       // current window (hello max_in_flight, then credit frames)
    std::int32_t outstanding = 0;  // tasks pushed and not yet answered
    bool retired = false;          // node draining: no new tasks

    [[nodiscard]] std::int32_t free_credit() const {
        return retired ? 0 : std::max(0, credit - outstanding);
    }
    [[nodiscard]] bool serves(const std::string& ns) const;
    [[nodiscard]] bool runs(const std::string& activity_type) const;
};

// A scope some workers can claim for, and how many rows they can take now.
struct Route {
    store::ClaimScope scope;
    std::int32_t capacity = 0;
};

using PlacementLookup = std::function<Placement(const std::string& ns)>;

class WorkerRegistry {
public:
    WorkerEntry& add(std::string session_id, protocol::Hello hello,
                     std::shared_ptr<WorkerChannel> channel);
    void remove(const std::string& session_id);
    [[nodiscard]] WorkerEntry* find(const std::string& session_id);
    [[nodiscard]] std::size_t size() const { return workers_.size(); }
    void for_each(const std::function<void(WorkerEntry&)>& visit);
    // Stops giving new tasks to every worker (node drain).
    void retire_all();

    // Claim scopes with free capacity now. A worker serving k namespaces spreads its free
    // credit over them, so the routes never promise more than the workers can take.
    [[nodiscard]] std::vector<Route> routes(const PlacementLookup& placement) const;

    // The least-loaded worker with free credit that may run `row` under `placement`, or
    // nullptr. Never mutates the row.
    [[nodiscard]] WorkerEntry* pick(const store::OutboxRow& row, const Placement& placement);

    // Whether `worker` may take the unpinned `row` under `placement` now. Under prefer, a
    // worker without a preferred label may when no up preferred-label worker could run the
    // row (same namespace, task queue and activity type).
    [[nodiscard]] bool takes_unpinned(const WorkerEntry& worker, const store::OutboxRow& row,
                                      const Placement& placement) const;
    // The activity types for which `worker` may take unpinned rows of `ns` now (sorted).
    [[nodiscard]] std::vector<std::string> unpinned_types(const WorkerEntry& worker,
                                                          const std::string& ns,
                                                          const Placement& placement) const;

private:
    [[nodiscard]] bool labelled_worker_up(const std::string& ns, const std::string& task_queue,
                                          const std::string& activity_type,
                                          const std::vector<std::string>& labels) const;

    std::map<std::string, WorkerEntry> workers_;  // by session id; ordered for stable routing
};

}  // namespace outboxd::worker
