#pragma once

// Everything a chaos run acts on, set up in order: its own PostgreSQL (commits made
// durable across an immediate restart), the schema, a synchronous standby and PgBouncer
// when the faults need them, the audit trigger, the nodes, the workers and the load. The
// main thread owns it: processes are spawned here only, and watch() is how the main thread
// waits, so that no exit goes unnoticed.

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "audit_trail.hpp"
#include "chaos_settings.hpp"
#include "load_generator.hpp"
#include "node_group.hpp"
#include "pgbouncer.hpp"
#include "scratch_postgres.hpp"
#include "worker_pool.hpp"

namespace outboxd::chaos {

// SIGINT or SIGTERM arrived: the run unwinds, stopping everything it started.
struct Interrupted : std::runtime_error {
    Interrupted() : std::runtime_error("interrupted") {}
};

// Routes SIGINT and SIGTERM to a flag that watch() turns into Interrupted.
void install_interrupt_handler();

class ChaosRig {
public:
    // `work_dir` holds pgtmp's directory and every log.
    ChaosRig(const ChaosSettings& settings, const std::string& work_dir);

    void start();
    // Waits `duration`, reaping exits every 100 ms (nodes that died are restarted and
    // recorded); throws Interrupted.
    void watch(std::chrono::milliseconds duration);
    // Stops the load, then waits until no row is pending or claimed, up to `timeout`.
    // Returns whether the backlog drained.
    bool stop_load_and_drain(std::chrono::milliseconds timeout);
    // Workers first (so that nodes have nothing in flight), then nodes, each by SIGTERM.
    void stop_processes();

    // The switchover: the primary stopped, its standby promoted, and whatever led the nodes
    // to the old primary pointed at the new one (PgBouncer retargeted, or their proxies to
    // the stopped server closed). Returns whether every step worked.
    [[nodiscard]] bool switch_over();
    // Makes the server the last switchover stopped a standby again, its proxies reopened.
    [[nodiscard]] bool rebuild_standby();

    [[nodiscard]] ScratchPostgres& postgres() { return *postgres_; }
    [[nodiscard]] NodeGroup& nodes() { return *nodes_; }
    [[nodiscard]] WorkerPool& workers() { return *workers_; }
    [[nodiscard]] const LoadGenerator& load() const { return *load_; }
    [[nodiscard]] const AuditTrail& audit() const { return *audit_; }
    // PgBouncer, when the run restarts it; nullptr otherwise.
    [[nodiscard]] test::PgBouncer* bouncer() { return bouncer_.get(); }
    [[nodiscard]] const std::string& log_dir() const { return log_dir_; }

private:
    void migrate();

    const ChaosSettings& settings_;
    std::string log_dir_;
    std::unique_ptr<ScratchPostgres> postgres_;
    std::unique_ptr<test::PgBouncer> bouncer_;
    std::unique_ptr<AuditTrail> audit_;
    std::unique_ptr<NodeGroup> nodes_;
    std::unique_ptr<WorkerPool> workers_;
    std::unique_ptr<LoadGenerator> load_;
};

}  // namespace outboxd::chaos
