#include "chaos_rig.hpp"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include <pqxx/pqxx>

#include "process.hpp"

namespace outboxd::chaos {

namespace {

std::atomic<bool> interrupt_requested{false};

extern "C" void on_interrupt(int) { interrupt_requested = true; }

constexpr std::chrono::milliseconds kWatchStep{100};

std::int64_t count_live_rows(const std::string& url) {
    pqxx::connection connection{url};
    pqxx::read_transaction tx{connection};
    return tx.exec("SELECT count(*) FROM outbox WHERE status IN ('pending', 'claimed')")[0][0]
        .as<std::int64_t>();
}

}  // namespace

void install_interrupt_handler() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
}

ChaosRig::ChaosRig(const ChaosSettings& settings, const std::string& work_dir)
    : settings_(settings), log_dir_(work_dir + "/logs") {
    std::filesystem::create_directories(log_dir_);
    postgres_ = std::make_unique<ScratchPostgres>(settings_.pgtmp, work_dir + "/pg", log_dir_);
}

void ChaosRig::start() {
    migrate();
    if (settings_.injects(FaultKind::switchover)) postgres_->add_standby();
    // Under the cluster's directory: PgBouncer runs as its owner, who may not reach work_dir.
    if (settings_.injects(FaultKind::pgbouncer_restart)) {
        bouncer_ = std::make_unique<test::PgBouncer>(postgres_->owner_dir() + "/pgbouncer",
                                                     postgres_->port());
    }
    // The audit trail, the load and the checker follow a switchover the way the nodes do.
    audit_ = std::make_unique<AuditTrail>(postgres_->writable_url());
    audit_->install();

    const std::map<std::string, std::string> node_env{
        {"OUTBOXD_LEASE_TTL_MS", std::to_string(settings_.lease_ttl.count())},
        {"OUTBOXD_TASK_TIMEOUT_MS", std::to_string(settings_.task_timeout.count())},
        {"OUTBOXD_POLL_INTERVAL_MS", std::to_string(settings_.poll_interval.count())},
        // Retries (a worker's abandoned task) come back within the settle period.
        {"OUTBOXD_BACKOFF_BASE_MS", "200"},
        {"OUTBOXD_BACKOFF_MAX_MS", "2000"},
        {"OUTBOXD_DRAIN_TIMEOUT_MS", "5000"},
        {"OUTBOXD_LOG_LEVEL", "info"},
        {"OUTBOXD_MIGRATE", "false"},
    };
    // Through PgBouncer when it is there (which a switchover retargets), else straight to
    // every server: a multi-host URL once there is a standby.
    nodes_ = std::make_unique<NodeGroup>(
        bouncer_ ? std::vector<std::uint16_t>{bouncer_->port()} : postgres_->ports(),
        settings_.bin_dir, log_dir_, node_env, settings_.nodes);
    nodes_->start_all();
    workers_ = std::make_unique<WorkerPool>(
        WorkerPoolSettings{settings_.bin_dir, log_dir_, nodes_->worker_urls(), settings_.workers,
                           settings_.worker_max_in_flight});
    workers_->start_all();
    load_ = std::make_unique<LoadGenerator>(LoadSettings{.database_url = postgres_->writable_url(),
                                                         .rows_per_s = settings_.rows_per_s,
                                                         .max_task_ms = settings_.max_task_ms});
    load_->start();
}

void ChaosRig::migrate() {
    test::Process migrate{{settings_.bin_dir + "/outboxd", "migrate"},
                          {{"OUTBOXD_DATABASE_URL", postgres_->url()}},
                          log_dir_ + "/migrate.log"};
    if (migrate.wait(std::chrono::seconds{60}) != 0) {
        throw std::runtime_error("outboxd migrate failed:\n" + migrate.log());
    }
    // pgtmp turns synchronous_commit off; with it off, an immediate restart may forget
    // commits already acknowledged, and the checker would report them lost. A database
    // setting outranks the server's command line, so every later session commits durably.
    pqxx::connection connection{postgres_->url()};
    pqxx::nontransaction tx{connection};
    tx.exec("ALTER DATABASE postgres SET synchronous_commit TO on");
}

void ChaosRig::watch(std::chrono::milliseconds duration) {
    const auto deadline = std::chrono::steady_clock::now() + duration;
    for (;;) {
        if (interrupt_requested) throw Interrupted{};
        nodes_->poll();
        workers_->poll();
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) return;
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(kWatchStep, deadline - now));
    }
}

bool ChaosRig::stop_load_and_drain(std::chrono::milliseconds timeout) {
    load_->stop();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        try {
            if (count_live_rows(postgres_->writable_url()) == 0) return true;
        } catch (const std::exception& error) {
            std::cerr << "chaos: drain check failed: " << error.what() << "\n";
        }
        watch(std::chrono::milliseconds{500});
    }
    return false;
}

void ChaosRig::stop_processes() {
    workers_->stop_all(std::chrono::seconds{10});
    nodes_->stop_all(std::chrono::seconds{15});
}

bool ChaosRig::switch_over() {
    const auto old_primary = postgres_->primary();
    if (!postgres_->stop_primary()) return false;
    if (!bouncer_) nodes_->set_upstream_up(old_primary, false);
    if (!postgres_->promote_standby()) return false;
    if (bouncer_) bouncer_->retarget(postgres_->port());
    return true;
}

bool ChaosRig::rebuild_standby() {
    const auto server = postgres_->down_server();
    if (!server) return false;
    const bool rebuilt = postgres_->rebuild_standby();
    // Up again even when it did not become synchronous: it runs, as a standby.
    if (!postgres_->down_server() && !bouncer_) nodes_->set_upstream_up(*server, true);
    return rebuilt;
}

}  // namespace outboxd::chaos
