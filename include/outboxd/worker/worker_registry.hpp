#pragma once

// The attached sinks (workers in the general sense: WebSocket workers, HTTP push targets),
// their credit windows, and the routing decisions built on them: which claim scopes have free
// capacity, and which sink runs a claimed row.
//
// Thread affinity: the node's loop thread only. No I/O: sinks are reached through
// sinks::Sink.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "outboxd/sinks/sink.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/placement.hpp"

namespace outboxd::worker {

// One attached sink. Its credit window and the tasks it holds change only through the
// registry (reserve, release, set_credit), which keeps 0 <= free credit <= window. Its
// profile is what it said once and does not change after add().
class WorkerEntry {
public:
    std::string session_id;
    sinks::SinkProfile profile;
    std::shared_ptr<sinks::Sink> sink;

    // Current window (the profile's credit, then set_credit).
    [[nodiscard]] std::int32_t credit() const { return credit_; }
    // Tasks pushed and not yet answered, over every database.
    [[nodiscard]] std::int32_t outstanding() const { return outstanding_; }
    // ... of database `db` (its index in the node's list).
    [[nodiscard]] std::int32_t held(std::size_t db) const {
        return db < held_.size() ? held_[db] : 0;
    }
    // Node draining: no new tasks.
    [[nodiscard]] bool retired() const { return retired_; }
    [[nodiscard]] std::int32_t free_credit() const {
        return retired_ ? 0 : std::max(0, credit_ - outstanding_);
    }
    [[nodiscard]] bool serves(const std::string& ns) const;
    // Whether it takes tasks of database `db` (a sink bound to one takes no other's).
    [[nodiscard]] bool takes_from(std::size_t db) const { return !only_db_ || *only_db_ == db; }
    [[nodiscard]] bool runs(const std::string& activity_type) const;

private:
    friend class WorkerRegistry;
    // The profile's namespaces and activity types, looked up for every claimed row: a worker
    // may serve a thousand namespaces.
    std::unordered_set<std::string> namespaces_;
    std::unordered_set<std::string> types_;
    std::int32_t credit_ = 0;
    std::int32_t outstanding_ = 0;
    std::vector<std::int32_t> held_;  // outstanding_ by database
    // The index of the database of profile.database; an unknown name: an index nobody has.
    std::optional<std::size_t> only_db_;
    bool retired_ = false;
};

// One worker's free credit, which every route it serves draws on: a worker serving a
// hundred namespaces has one window, not a hundred. `id` tells the pools of the routes of one
// routes() call apart.
struct CreditPool {
    std::uint32_t id = 0;
    std::int32_t free = 0;
    bool operator==(const CreditPool&) const = default;
};

// A scope some workers can claim for, and how many rows they can take now: at most
// `capacity`, and, when it names pools, at most what is left in them once the other routes
// drawing on them took theirs (the claim planner keeps that account).
struct Route {
    store::ClaimScope scope;
    std::int32_t capacity = 0;
    std::vector<CreditPool> pools;  // empty: `capacity` alone bounds it
};

using PlacementLookup = std::function<store::Placement(const std::string& ns)>;

// Every sink's credit window is shared by the databases of the node (one dispatcher each,
// told apart by their index `db`). While one database alone has due work it may use a whole
// window; while several have, each may hold at most its fair share of every window (the
// window divided among them, the remainder taking turns), so that a busy database never
// starves a quiet one. A dispatcher says what it wants (want()): a share, for due work it
// knows of (its last round was full), or one look, for work there may be (a poll, a wake, new
// shards). A look holds back one credit from the databases sharing the windows, not a share:
// twenty quiet databases polling cost a busy one a credit each while they look, not its
// window. A task ended by one database while others want calls `on_freed` so that they may
// claim.
class WorkerRegistry {
public:
    enum class Want : std::uint8_t { none, look, share };

    // The databases sharing the windows, by index (one, "default", unless set). Before add().
    void set_databases(std::vector<std::string> names);
    void want(std::size_t db, Want want);
    // Database `db` has due work it knows of (a share), or none.
    void want(std::size_t db, bool wants) { want(db, wants ? Want::share : Want::none); }
    [[nodiscard]] Want wanted(std::size_t db) const {
        return db < wanting_.size() ? wanting_[db] : Want::none;
    }
    [[nodiscard]] bool wants(std::size_t db) const { return wanted(db) != Want::none; }
    // Called after a task of `db` ended while another database wants credit.
    void on_freed(std::function<void(std::size_t db)> freed) { freed_ = std::move(freed); }
    // What `worker` may take now for database `db`: its free credit, within the database's
    // fair share while several want.
    [[nodiscard]] std::int32_t free_for(const WorkerEntry& worker, std::size_t db) const;

    WorkerEntry& add(std::string session_id, sinks::SinkProfile profile,
                     std::shared_ptr<sinks::Sink> sink);
    void remove(const std::string& session_id);
    [[nodiscard]] WorkerEntry* find(const std::string& session_id);
    [[nodiscard]] std::size_t size() const { return workers_.size(); }
    void for_each(const std::function<void(WorkerEntry&)>& visit);
    // Stops giving new tasks to every worker (node drain).
    void retire_all();

    // The credit invariant. reserve(): `worker` takes one task (it must have free credit;
    // false and nothing changes otherwise). release(): the worker of `session_id` is done
    // with one (nothing when it is gone). set_credit(): a new window (a credit frame); tasks
    // already out above it stay out, and no new one goes until they come back under it.
    [[nodiscard]] bool reserve(WorkerEntry& worker, std::size_t db = 0);
    void release(const std::string& session_id, std::size_t db = 0);
    void set_credit(const std::string& session_id, std::int32_t credit);

    // Claim scopes with free capacity now. Every route a worker serves names the worker's
    // free credit as a pool of it: planned together, the routes never promise more than the
    // workers can take, and one busy namespace of a worker's hundred may use all of it.
    [[nodiscard]] std::vector<Route> routes(const PlacementLookup& placement,
                                            std::size_t db = 0) const;

    // The least-loaded worker with free credit that may run `row` under `placement`, or
    // nullptr. Never mutates the row.
    [[nodiscard]] WorkerEntry* pick(const store::OutboxRow& row, const store::Placement& placement,
                                    std::size_t db = 0);

    // Whether `worker` may take the unpinned `row` under `placement` now. Under prefer, a
    // worker without a preferred label may when no up preferred-label worker could run the
    // row (same namespace, task queue and activity type).
    [[nodiscard]] bool takes_unpinned(const WorkerEntry& worker, const store::OutboxRow& row,
                                      const store::Placement& placement) const;
    // The activity types for which `worker` may take unpinned rows of `ns` now (sorted).
    [[nodiscard]] std::vector<std::string> unpinned_types(const WorkerEntry& worker,
                                                          const std::string& ns,
                                                          const store::Placement& placement) const;

private:
    [[nodiscard]] bool labelled_worker_up(const std::string& ns, const std::string& task_queue,
                                          const std::string& activity_type,
                                          const std::vector<std::string>& labels) const;

    [[nodiscard]] WorkerEntry* pick_within(const store::OutboxRow& row,
                                           const store::Placement& placement, std::size_t db,
                                           bool share_only);

    std::map<std::string, WorkerEntry> workers_;  // by session id; ordered for stable routing
    std::vector<std::string> databases_{"default"};
    std::vector<Want> wanting_;
    std::size_t sharing_count_ = 0;  // databases wanting a share
    std::size_t looking_count_ = 0;  // databases wanting a look
    std::size_t turn_ = 0;           // which sharing databases take the windows' remainders
    std::function<void(std::size_t)> freed_;
};

}  // namespace outboxd::worker
