#include "fault_injector.hpp"

#include <future>
#include <vector>

#include "chaos_clock.hpp"
#include "hostile_client.hpp"
#include "raw_socket.hpp"

namespace outboxd::chaos {

namespace {

constexpr std::chrono::milliseconds kBusyWorkerWait{3000};
constexpr std::chrono::milliseconds kWorkerDown{1000};
constexpr std::chrono::milliseconds kAfterHostile{1000};
constexpr std::chrono::milliseconds kHealthTimeout{5000};

}  // namespace

FaultRecord FaultInjector::inject(FaultKind kind, int sequence) {
    FaultRecord record;
    record.kind = kind;
    const auto node = static_cast<std::size_t>(sequence) % rig_.nodes().size();
    const auto worker = static_cast<std::size_t>(sequence) % rig_.workers().size();
    switch (kind) {
        case FaultKind::kill_node:
            kill_node(record, node);
            break;
        case FaultKind::stop_node:
            stop_node(record, node);
            break;
        case FaultKind::pg_fast:
            restart_postgres(record, "fast");
            break;
        case FaultKind::pg_immediate:
            restart_postgres(record, "immediate");
            break;
        case FaultKind::outage:
            outage(record);
            break;
        case FaultKind::switchover:
            switchover(record);
            break;
        case FaultKind::pgbouncer_restart:
            restart_pgbouncer(record);
            break;
        case FaultKind::partition:
            partition(record, node);
            break;
        case FaultKind::kill_worker:
            kill_worker(record, worker);
            break;
        case FaultKind::hostile:
            hostile(record);
            break;
    }
    return record;
}

void FaultInjector::kill_node(FaultRecord& record, std::size_t node) {
    record.target = rig_.nodes().id(node);
    record.start_ms = unix_ms();
    rig_.nodes().kill(node);
    rig_.watch(settings_.node_down);
    record.end_ms = unix_ms();
    rig_.nodes().restart(node);
    record.note = "down " + std::to_string(settings_.node_down.count()) + " ms, restarted";
}

void FaultInjector::stop_node(FaultRecord& record, std::size_t node) {
    record.target = rig_.nodes().id(node);
    record.start_ms = unix_ms();
    rig_.nodes().pause(node);
    rig_.watch(settings_.outage());
    rig_.nodes().resume(node);
    record.end_ms = unix_ms();
    record.note = "stopped " + std::to_string(settings_.outage().count()) + " ms";
}

void FaultInjector::restart_postgres(FaultRecord& record, const char* mode) {
    record.target = rig_.postgres().name(rig_.postgres().primary());
    record.start_ms = unix_ms();
    record.injected = rig_.postgres().restart(mode);
    record.end_ms = unix_ms();
    record.note = record.injected
                      ? std::string{"restart -m "} + mode + " took " +
                            std::to_string(record.end_ms - record.start_ms) + " ms"
                      : std::string{"pg_ctl restart -m "} + mode + " FAILED (logs/pg_ctl.log)";
}

void FaultInjector::outage(FaultRecord& record) {
    auto& postgres = rig_.postgres();
    record.target = postgres.name(postgres.primary());
    record.start_ms = unix_ms();
    record.injected = postgres.stop_primary();
    rig_.watch(settings_.database_outage());
    const auto restart_ms = unix_ms();
    record.injected = postgres.start_primary() && record.injected;
    record.end_ms = unix_ms();
    record.note = record.injected
                      ? "stopped " + std::to_string(settings_.database_outage().count()) +
                            " ms (3x lease TTL), start took " +
                            std::to_string(record.end_ms - restart_ms) + " ms"
                      : std::string{"pg_ctl stop or start FAILED (logs/pg_ctl.log)"};
}

void FaultInjector::switchover(FaultRecord& record) {
    auto& postgres = rig_.postgres();
    std::string rebuilt;
    // The old primary of an earlier switchover becomes the standby first, outside the
    // fault's window: the base backup is set-up, not part of the fault.
    if (const auto down = postgres.down_server()) {
        const auto rebuild_start = unix_ms();
        if (!rig_.rebuild_standby()) {
            record.target = postgres.name(*down);
            record.start_ms = record.end_ms = unix_ms();
            record.injected = false;
            record.note =
                "rebuilding " + postgres.name(*down) + " as a standby FAILED (logs/pg_ctl.log)";
            return;
        }
        rebuilt = "; " + postgres.name(*down) + " rebuilt as its standby first in " +
                  std::to_string(unix_ms() - rebuild_start) + " ms";
    }
    const auto old_primary = postgres.name(postgres.primary());
    record.start_ms = unix_ms();
    record.injected = rig_.switch_over();
    record.end_ms = unix_ms();
    const auto new_primary = postgres.name(postgres.primary());
    record.target = old_primary + ">" + new_primary;
    record.note = record.injected ? old_primary + " stopped, " + new_primary + " promoted in " +
                                        std::to_string(record.end_ms - record.start_ms) + " ms" +
                                        (rig_.bouncer() ? ", PgBouncer retargeted" : "") + rebuilt
                                  : "stop or promote FAILED (logs/pg_ctl.log)" + rebuilt;
}

void FaultInjector::restart_pgbouncer(FaultRecord& record) {
    record.target = "pgbouncer";
    record.start_ms = unix_ms();
    record.injected = rig_.bouncer() != nullptr && rig_.bouncer()->restart();
    record.end_ms = unix_ms();
    record.note =
        record.injected
            ? "restart took " + std::to_string(record.end_ms - record.start_ms) + " ms"
            : std::string{"restart FAILED (pgbouncer/pgbouncer.log in the cluster directory)"};
}

void FaultInjector::partition(FaultRecord& record, std::size_t node) {
    record.target = rig_.nodes().id(node);
    record.start_ms = unix_ms();
    rig_.nodes().cut(node);
    rig_.watch(settings_.outage());
    rig_.nodes().restore(node);
    record.end_ms = unix_ms();
    record.note = "cut from postgres " + std::to_string(settings_.outage().count()) + " ms";
}

void FaultInjector::kill_worker(FaultRecord& record, std::size_t first_choice) {
    auto& workers = rig_.workers();
    // The point is to lose tasks mid-flight: wait for a worker that has some.
    std::size_t chosen = first_choice;
    std::size_t in_flight = 0;
    (void)await_condition(
        [&] {
            for (std::size_t k = 0; k < workers.size(); ++k) {
                const auto i = (first_choice + k) % workers.size();
                if ((in_flight = workers.in_flight(i)) > 0) {
                    chosen = i;
                    return true;
                }
            }
            return false;
        },
        kBusyWorkerWait);
    record.target = workers.name(chosen);
    record.start_ms = unix_ms();
    workers.kill(chosen);
    record.injected = in_flight > 0;
    rig_.watch(kWorkerDown);
    record.end_ms = unix_ms();
    workers.replace(chosen);
    record.note = std::to_string(in_flight) + " task(s) in flight at the kill";
}

void FaultInjector::hostile(FaultRecord& record) {
    record.target = "all nodes";
    const HostileClient client{rig_.log_dir() + "/hostile.deliveries"};
    auto& nodes = rig_.nodes();
    record.start_ms = unix_ms();
    // One thread per node: none of them spawns a process.
    std::vector<std::future<HostileTally>> attacks;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        attacks.push_back(std::async(std::launch::async, [&client, port = nodes.http_port(i)] {
            return client.attack(port);
        }));
    }
    HostileTally total;
    std::string suspects;
    for (std::size_t i = 0; i < attacks.size(); ++i) {
        // Keeps reaping while the attack runs: a node that dies is restarted at once, so the
        // attack can go on and name each payload after which its node went away.
        while (attacks[i].wait_for(std::chrono::milliseconds{0}) != std::future_status::ready) {
            rig_.watch(std::chrono::milliseconds{100});
        }
        const auto tally = attacks[i].get();
        total.connections += tally.connections;
        total.not_connected += tally.not_connected;
        total.tasks_taken += tally.tasks_taken;
        total.tasks_completed += tally.tasks_completed;
        if (!tally.suspects.empty()) {
            suspects += "; " + nodes.id(i) + " went away after:";
            for (const auto& name : tally.suspects) suspects += " " + name;
        }
    }
    record.end_ms = unix_ms();
    rig_.watch(kAfterHostile);
    std::string unresponsive;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (!answers_health(nodes.http_port(i), kHealthTimeout)) {
            ++record.unresponsive_nodes;
            unresponsive += " " + nodes.id(i);
        }
    }
    record.note = std::to_string(total.connections) + " connections (" +
                  std::to_string(total.not_connected) + " refused), hostile worker took " +
                  std::to_string(total.tasks_taken) + " task(s)" + suspects +
                  (unresponsive.empty() ? "" : "; no /healthz from" + unresponsive);
}

}  // namespace outboxd::chaos
