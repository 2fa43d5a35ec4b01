// outboxd-chaos: the chaos harness. Runs its own PostgreSQL, three nodes and worker
// processes under steady load, injects faults in turn (kill -9 and SIGSTOP of a node,
// PostgreSQL fast and immediate restarts, a database outage past every lease, a switchover
// to a synchronous standby, a restart of PgBouncer in front of it, a partition of one node
// from the database, kill -9 of a busy worker, a hostile client; fault_kind.hpp), then
// checks that every staged row ended terminal, that no outcome came from a stale claim, that
// redeliveries only hit rows in flight at a fault, that no node exited unless killed and
// that the done rate recovered after each fault.
//
// Progress goes to stderr; stdout carries the report, whose last line is one JSON object.
// Exit codes: 0 every invariant held, 1 one failed, 2 bad flags, 3 the harness itself
// failed (setup, PostgreSQL), 130 interrupted.

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <variant>

#include "chaos_clock.hpp"
#include "chaos_report.hpp"
#include "chaos_rig.hpp"
#include "chaos_settings.hpp"
#include "fault_injector.hpp"
#include "invariant_checker.hpp"

namespace {

using namespace outboxd::chaos;

constexpr int kExitInvariantFailed = 1;
constexpr int kExitHarnessError = 3;
constexpr int kExitInterrupted = 130;

std::string make_work_dir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "outboxd-chaos.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create " + pattern);
    return pattern;
}

double seconds_since(std::int64_t start_ms) {
    return static_cast<double>(unix_ms() - start_ms) / 1000.0;
}

int run(const ChaosSettings& settings, const std::string& work_dir) {
    const auto run_start = unix_ms();
    ChaosRig rig{settings, work_dir};
    std::cerr << "chaos: PostgreSQL at " << rig.postgres().url() << "; logs in " << rig.log_dir()
              << "\n";
    rig.start();
    std::cerr << "chaos: " << settings.nodes << " nodes, " << settings.workers << " workers, "
              << settings.rows_per_s << " rows/s; warming up\n";
    rig.watch(settings.warmup);

    FaultInjector injector{rig, settings};
    std::vector<FaultRecord> faults;
    int sequence = 0;
    for (int round = 0; round < settings.rounds; ++round) {
        for (const auto kind : settings.faults) {
            std::cerr << "chaos: +" << seconds_since(run_start) << " s: " << name_of(kind) << "\n";
            faults.push_back(injector.inject(kind, sequence++));
            std::cerr << "chaos:   " << faults.back().target << ": " << faults.back().note << "\n";
            rig.watch(settings.settle);
        }
    }

    const auto load_stopped = unix_ms();
    std::cerr << "chaos: +" << seconds_since(run_start) << " s: load stopped, draining\n";
    const bool drained = rig.stop_load_and_drain(settings.drain_timeout);
    rig.stop_processes();

    RunFacts facts;
    // Whichever server is primary now: a switchover may have moved it.
    facts.database_url = rig.postgres().url();
    facts.acknowledged = rig.load().acknowledged();
    facts.drained = drained;
    facts.delivery_logs = rig.workers().delivery_logs();
    const auto hostile_log = rig.log_dir() + "/hostile.deliveries";
    if (std::filesystem::exists(hostile_log)) facts.delivery_logs.push_back(hostile_log);
    facts.faults = faults;
    facts.load_stopped_ms = load_stopped;
    facts.node_exits = rig.nodes().unexpected_exits();
    facts.worker_unexpected_exits = rig.workers().unexpected_exits();

    auto result = InvariantChecker{settings, rig.audit()}.check(facts);
    result.mode = settings.quick ? "quick" : "full";
    result.duration_s = seconds_since(run_start);
    if (settings.keep || !result.pass()) rig.audit().export_to(rig.log_dir() + "/claim_ends.tsv");
    rig.postgres().stop();
    print_report(std::cout, result, run_start, work_dir + "/result.json");
    return result.pass() ? 0 : kExitInvariantFailed;
}

}  // namespace

int main(int argc, char** argv) {
    auto parsed = parse_settings(argc, argv);
    if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
    const auto settings = std::get<ChaosSettings>(std::move(parsed));
    install_interrupt_handler();

    const bool own_work_dir = settings.work_dir.empty();
    int exit_code = kExitHarnessError;
    std::string work_dir;
    try {
        work_dir = own_work_dir ? make_work_dir() : settings.work_dir;
        std::filesystem::create_directories(work_dir);
        exit_code = run(settings, work_dir);
    } catch (const Interrupted&) {
        std::cerr << "chaos: interrupted\n";
        exit_code = kExitInterrupted;
    } catch (const std::exception& error) {
        std::cerr << "chaos: harness error: " << error.what() << "\n";
        exit_code = kExitHarnessError;
    }
    if (own_work_dir && !work_dir.empty()) {
        if (exit_code == 0 && !settings.keep) {
            std::filesystem::remove_all(work_dir);
        } else {
            std::cerr << "chaos: logs kept in " << work_dir << "\n";
        }
    }
    return exit_code;
}
