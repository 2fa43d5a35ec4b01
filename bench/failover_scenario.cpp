#include "failover_scenario.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "child_process.hpp"
#include "e2e_drain.hpp"
#include "node_fleet.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kLeaseTtlMs = 2000;
constexpr int kOutageTasks = 3000;
constexpr const char* kPgBouncer = "/usr/sbin/pgbouncer";

double seconds_since(Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
}

// The fleet settings of `url` with the scenario's lease TTL.
FleetSettings fleet_of(const BenchContext& context, const std::string& url) {
    auto fleet = context.fleet(url);
    fleet.extra_env.emplace_back("OUTBOXD_LEASE_TTL_MS", std::to_string(kLeaseTtlMs));
    fleet.extra_env.emplace_back("OUTBOXD_TASK_TIMEOUT_MS", "120000");
    return fleet;
}

std::int64_t scalar(const std::string& url, const std::string& sql) {
    pqxx::connection conn{url};
    return pqxx::nontransaction{conn}.exec1(sql)[0].as<std::int64_t>();
}

// Polls `done` every 20 ms until it holds or `timeout` passes; whether it held.
template <typename Done>
bool wait_until(Done done, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!done()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

// A free 127.0.0.1 port below the ephemeral range (a client socket may take one above).
std::uint16_t free_low_port() {
    std::mt19937 random{std::random_device{}()};
    for (int attempt = 0; attempt < 200; ++attempt) {
        const auto port = static_cast<std::uint16_t>(20000 + random() % 12000);
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
        ::close(fd);
        if (free) return port;
    }
    throw std::runtime_error{"no free port below 32000"};
}

// `url` (a postgresql:// URI) with its port replaced.
std::string with_port(const std::string& url, std::uint16_t port) {
    return std::regex_replace(url, std::regex{R"(@([^:/]+):\d+)"}, "@$1:" + std::to_string(port));
}

std::string port_of(const std::string& url) {
    std::smatch match;
    if (!std::regex_search(url, match, std::regex{R"(@[^:/]+:(\d+))"})) {
        throw std::runtime_error{"no port in the second database URL"};
    }
    return match[1];
}

// PostgreSQL and PgBouncer refuse to run as root: their commands run as postgres then.
bool root() { return ::geteuid() == 0; }

void hand_to_postgres(const std::string& path) {
    if (!root()) return;
    const passwd* owner = ::getpwnam("postgres");
    if (!owner || ::chown(path.c_str(), owner->pw_uid, owner->pw_gid) != 0) {
        throw std::runtime_error{"cannot hand " + path + " to the postgres user"};
    }
}

void run_as_postgres(const std::string& command) {
    const auto line = (root() ? "runuser -u postgres -- " : std::string{}) + command;
    if (std::system(line.c_str()) != 0) throw std::runtime_error{"failed: " + line};
}

// The bin directory of the PostgreSQL that runs `data_dir`, and the server options it was
// started with but its data directory, port and socket directory (from postmaster.opts:
// `/usr/lib/…/postgres "-D" "/…/data" "-c" "max_connections=300" … "-p" "26954"`). A
// standby must run with settings no lower than its primary's (max_connections and alike).
std::pair<std::string, std::string> server_of(const std::string& data_dir) {
    std::ifstream file{data_dir + "/postmaster.opts"};
    std::string postgres;
    file >> postgres;
    std::vector<std::string> words;
    for (std::string word; file >> word;) words.push_back(word.substr(1, word.size() - 2));
    std::string options;
    for (std::size_t i = 0; i + 1 < words.size(); i += 2) {
        if (words[i] == "-D" || words[i] == "-p" ||
            words[i + 1].starts_with("unix_socket_directories=")) {
            continue;
        }
        options += " " + words[i] + " " + words[i + 1];
    }
    return {postgres.substr(0, postgres.rfind('/')), options};
}

// PgBouncer in session mode in front of the bench cluster, on a free port; stopped with it.
class Bouncer {
public:
    Bouncer(const std::string& dir, const std::string& server_port) {
        fs::create_directories(dir);
        hand_to_postgres(dir);
        port_ = free_low_port();
        std::ofstream{dir + "/userlist.txt"} << "\"postgres\" \"\"\n";
        std::ofstream{dir + "/pgbouncer.ini"}
            << "[databases]\n* = host=127.0.0.1 port=" << server_port << "\n[pgbouncer]\n"
            << "listen_addr = 127.0.0.1\nlisten_port = " << port_ << "\nunix_socket_dir =\n"
            << "auth_type = trust\nauth_file = " << dir << "/userlist.txt\n"
            << "pool_mode = session\nmax_client_conn = 1000\ndefault_pool_size = 100\n"
            << "server_reset_query = DISCARD ALL\nlogfile = " << dir << "/pgbouncer.log\n";
        for (const auto* file : {"/userlist.txt", "/pgbouncer.ini"}) hand_to_postgres(dir + file);
        ChildSpec spec;
        if (root()) {
            spec.argv = {"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres",
                         "--init-groups", "--"};
        }
        spec.argv.insert(spec.argv.end(), {kPgBouncer, dir + "/pgbouncer.ini"});
        spec.log_path = dir + "/pgbouncer.out";
        process_ = std::make_unique<ChildProcess>(spec);
        const auto listening = [&] {
            try {
                pqxx::connection probe{"postgresql://postgres@127.0.0.1:" + std::to_string(port_) +
                                       "/postgres"};
                return true;
            } catch (const std::exception&) {
                return process_->alive()
                           ? false
                           : throw std::runtime_error{"pgbouncer exited: " + process_->log_tail(5)};
            }
        };
        if (!wait_until(listening, 20s)) throw std::runtime_error{"pgbouncer did not listen"};
    }

    [[nodiscard]] std::uint16_t port() const { return port_; }

private:
    std::uint16_t port_ = 0;
    std::unique_ptr<ChildProcess> process_;
};

// kill -9 of one of 5 nodes: seconds until the other four own every shard.
double takeover(const BenchContext& context) {
    const auto url = context.databases.create_migrated("bench_takeover");
    NodeFleet fleet{fleet_of(context, url), 5, "takeover"};
    pqxx::connection conn{url};
    const auto victim = std::string{"bench-takeover-node-3"};
    const auto owned_by_others = [&] {
        return pqxx::nontransaction{conn}
                   .exec1("SELECT count(*) FROM live_shard_leases WHERE node_id <> '" + victim +
                          "'")[0]
                   .as<int>() == 1024;
    };
    fleet.kill(2);
    const auto killed = Clock::now();
    std::optional<double> seconds;
    while (!seconds && seconds_since(killed) < 30) {
        if (owned_by_others()) seconds = seconds_since(killed);
        std::this_thread::sleep_for(10ms);
    }
    fleet.stop();
    context.databases.drop("bench_takeover");
    if (!seconds) throw std::runtime_error{"takeover: the shards were not owned again in 30 s"};
    return *seconds;
}

// The 1-node drain direct, then through PgBouncer: rows/s of each.
std::pair<double, double> pooled_drains(const BenchContext& context) {
    const auto& settings = context.settings;
    // Beside the bench cluster's data: a directory the postgres user can reach.
    const auto dir = (settings.pg_data_dir.empty() ? fs::path{settings.work_dir}
                                                   : fs::path{settings.pg_data_dir}.parent_path()) /
                     "pgbouncer";
    Bouncer bouncer{dir.string(), port_of(settings.database_url)};
    std::pair<double, double> rates;
    for (const bool pooled : {false, true}) {
        const auto name = std::string{pooled ? "bench_fo_pooled" : "bench_fo_direct"};
        const auto url = context.databases.create_migrated(name);
        stage_pending_rows(url, settings.rows, "fo-");
        settle(url);
        const auto run = drain_e2e(context, pooled ? with_port(url, bouncer.port()) : url, 1,
                                   pooled ? "fo_pooled" : "fo_direct");
        (pooled ? rates.second : rates.first) = run.rows_per_s();
        context.databases.drop(name);
    }
    return rates;
}

// 3 nodes, kOutageTasks tasks held by sleeping workers, the second instance down 3 TTLs.
// Returns the rows delivered more than once.
std::int64_t outage(const BenchContext& context) {
    const auto& settings = context.settings;
    BenchDatabases second{settings.second_database_url};
    const auto url = second.create_migrated("bench_fo_outage");
    NodeFleet fleet{fleet_of(context, url), 3, "fo_outage"};
    {
        pqxx::connection conn{url};
        pqxx::work tx{conn};
        tx.exec(
            "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) SELECT 'o-' || g,"
            " 0, 'sleep', '{\"ms\": 30000}' FROM generate_series(1, " +
            std::to_string(kOutageTasks) + ") g");
        tx.commit();
    }
    WorkerGroup sleepers;
    sleepers.name = "sleeper";
    sleepers.count = 3;
    sleepers.max_in_flight = 1200;
    sleepers.activity = "sleep";
    sleepers.received_log = true;
    WorkerFleet workers{
        fleet_of(context, url), {sleepers}, fleet.worker_urls().front(), "fo_outage"};
    const auto claimed = [&] {
        return scalar(url, "SELECT count(*) FROM outbox WHERE status = 'claimed'") == kOutageTasks;
    };
    if (!wait_until(claimed, 60s)) throw std::runtime_error{"outage: the tasks did not go out"};
    spdlog::info("failover: {} tasks out; the second instance stops for {} ms", kOutageTasks,
                 3 * kLeaseTtlMs);
    instance_ctl(settings.second_pg_data_dir, false);
    std::this_thread::sleep_for(std::chrono::milliseconds{3 * kLeaseTtlMs});
    instance_ctl(settings.second_pg_data_dir, true);
    const auto done = [&] {
        return scalar(url, "SELECT count(*) FROM outbox WHERE status = 'done'") == kOutageTasks;
    };
    if (!wait_until(done, 120s)) throw std::runtime_error{"outage: not every task was done"};
    workers.stop();
    const auto twice = workers.keys_received_twice();
    fleet.stop();
    second.drop("bench_fo_outage");
    return twice;
}

// A synchronous standby of the second instance, promoted after its primary stops mid-drain.
// Returns the seconds from the stop to the first row done on the new primary, and the rows
// delivered more than once.
std::pair<double, std::int64_t> switchover(const BenchContext& context) {
    const auto& settings = context.settings;
    const auto& primary_dir = settings.second_pg_data_dir;
    const auto primary_url = settings.second_database_url;
    const auto primary_port = port_of(primary_url);
    BenchDatabases second{primary_url};
    const auto database = std::string{"bench_fo_switch"};
    const auto direct = second.create_migrated(database);
    const auto rows = settings.quick ? std::int64_t{20'000} : std::int64_t{100'000};
    stage_pending_rows(direct, rows, "sw-");
    settle(direct);

    // Beside the primary's data: a directory the postgres user can reach.
    const auto dir = (fs::path{primary_dir}.parent_path() / "standby").string();
    fs::remove_all(dir);
    fs::create_directories(dir);
    hand_to_postgres(dir);
    const auto server = server_of(primary_dir);
    const auto& bin = server.first;  // a lambda below captures it: no structured binding
    const auto& options = server.second;
    const auto standby_port = free_low_port();
    run_as_postgres(bin + "/pg_basebackup -D '" + dir + "/data' -h 127.0.0.1 -p " + primary_port +
                    " -U postgres -R -X stream -c fast >/dev/null 2>&1");
    run_as_postgres(bin + "/pg_ctl -D '" + dir + "/data' -w -t 60 -l '" + dir +
                    "/server.log' -o '-p " + std::to_string(standby_port) + " -k " + dir + options +
                    "' start >/dev/null");
    const auto standby_url = with_port(direct, standby_port);
    const auto stop_standby = [&] {
        std::system(((root() ? "runuser -u postgres -- " : "") + bin + "/pg_ctl -D '" + dir +
                     "/data' -m fast -w stop >/dev/null 2>&1")
                        .c_str());
    };
    const auto admin = [](const std::string& url, const std::string& sql) {
        pqxx::connection conn{url};
        pqxx::nontransaction{conn}.exec(sql);
    };
    admin(primary_url, "ALTER SYSTEM SET synchronous_standby_names = '*'");
    admin(primary_url, "SELECT pg_reload_conf()");
    const auto synchronous = [&] {
        return scalar(primary_url,
                      "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1;
    };
    std::pair<double, std::int64_t> result{-1, -1};
    try {
        if (!wait_until(synchronous, 30s)) throw std::runtime_error{"standby not synchronous"};
        const auto both = "host=127.0.0.1,127.0.0.1 port=" + primary_port + "," +
                          std::to_string(standby_port) + " dbname=" + database +
                          " user=postgres target_session_attrs=read-write";
        NodeFleet fleet{fleet_of(context, both), 3, "fo_switch"};
        WorkerFleet workers{fleet_of(context, both),
                            {default_workers(settings)},
                            fleet.worker_urls().front(),
                            "fo_switch"};
        if (!wait_until([&] { return fleet.rows_done() >= rows / 4; }, 60s)) {
            throw std::runtime_error{"switchover: the drain did not start"};
        }
        const auto stopped = Clock::now();
        instance_ctl(primary_dir, false);
        run_as_postgres(bin + "/pg_ctl -D '" + dir + "/data' -w -t 60 promote >/dev/null");
        // Rows done by the new primary: finished_at by its clock, after the stop (one host).
        const auto stop_time =
            std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch() - (Clock::now() - stopped))
                .count();
        const auto first_done = [&] {
            return scalar(standby_url,
                          "SELECT count(*) FROM outbox WHERE finished_at > to_timestamp(" +
                              std::to_string(stop_time) + " / 1000.0)") > 0;
        };
        if (!wait_until(first_done, 60s)) throw std::runtime_error{"switchover: no row done"};
        result.first = seconds_since(stopped);
        const auto drained = [&] {
            return scalar(standby_url, "SELECT count(*) FROM outbox WHERE status <> 'done'") == 0;
        };
        if (!wait_until(drained, 120s)) throw std::runtime_error{"switchover: rows left"};
        workers.stop();
        result.second = workers.keys_received_twice();
        fleet.stop();
    } catch (...) {
        stop_standby();
        if (!fs::exists(primary_dir + "/postmaster.pid")) instance_ctl(primary_dir, true);
        admin(primary_url, "ALTER SYSTEM RESET synchronous_standby_names");
        admin(primary_url, "SELECT pg_reload_conf()");
        throw;
    }
    // The second instance runs on as a primary of its own (its standby gone).
    stop_standby();
    fs::remove_all(dir);
    instance_ctl(primary_dir, true);
    admin(primary_url, "ALTER SYSTEM RESET synchronous_standby_names");
    admin(primary_url, "SELECT pg_reload_conf()");
    second.drop(database);
    return result;
}

}  // namespace

void FailoverScenario::once(const Turn& turn) {
    if (turn.settings().smoke) return;
    const auto& context = turn.context;
    ran_ = true;
    result_.lease_ttl_ms = kLeaseTtlMs;
    result_.takeover_s = takeover(context);
    spdlog::info("failover: takeover after {:.2f} s", *result_.takeover_s);
    if (fs::exists(kPgBouncer)) {
        const auto [direct, pooled] = pooled_drains(context);
        result_.direct_rows_per_s = direct;
        result_.pgbouncer_rows_per_s = pooled;
    } else {
        spdlog::info("failover: no {}: the PgBouncer run is skipped", kPgBouncer);
    }
    if (context.settings.second_pg_data_dir.empty()) {
        spdlog::info("failover: no --second-pg-data: the outage and switchover runs are skipped");
        return;
    }
    result_.outage_in_flight = kOutageTasks;
    result_.outage_duplicates = outage(context);
    const auto [stall, twice] = switchover(context);
    result_.switchover_stall_s = stall;
    result_.switchover_duplicates = twice;
}

void FailoverScenario::render_table(const BenchSettings& /*settings*/,
                                    const ScenarioRegistry& /*registry*/,
                                    ReportTable& table) const {
    if (!ran_) return;
    const double ttl = result_.lease_ttl_ms / 1000.0;
    std::string text;
    if (result_.takeover_s) {
        text += strf(
            "  failover: kill -9 of 1 of 5 nodes, shards owned again after %.2f s (lease TTL "
            "%.1f s; target <= %.2f: %s)\n",
            *result_.takeover_s, ttl, ttl * 4 / 3,
            verdict(*result_.takeover_s <= ttl * 4 / 3).c_str());
    }
    if (result_.direct_rows_per_s && result_.pgbouncer_rows_per_s) {
        text += strf(
            "  failover: 1 node direct %.0f rows/s, through PgBouncer (session) %.0f: ratio %.3f\n",
            *result_.direct_rows_per_s, *result_.pgbouncer_rows_per_s,
            *result_.pgbouncer_rows_per_s / *result_.direct_rows_per_s);
    }
    if (result_.outage_duplicates) {
        text += strf(
            "  failover: database down %.1f s with %lld tasks out: %lld delivered twice "
            "(target 0: %s)\n",
            3 * ttl, static_cast<long long>(*result_.outage_in_flight),
            static_cast<long long>(*result_.outage_duplicates),
            verdict(*result_.outage_duplicates == 0).c_str());
    }
    if (result_.switchover_stall_s) {
        text += strf(
            "  failover: primary stopped, standby promoted: first row done after %.2f s "
            "(target <= %.1f: %s), %lld delivered twice\n",
            *result_.switchover_stall_s, 2 * ttl,
            verdict(*result_.switchover_stall_s <= 2 * ttl).c_str(),
            static_cast<long long>(result_.switchover_duplicates.value_or(-1)));
    }
    table.put(std::string{kName}, text);
}

void FailoverScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["takeover_s"] = nullptr;
    out["takeover_lease_ttl_ms"] = nullptr;
    out["pgbouncer_ratio"] = nullptr;
    out["outage_duplicates"] = nullptr;
    out["switchover_stall_s"] = nullptr;
    if (!ran_) return;
    if (result_.takeover_s) {
        out["takeover_s"] = json_fine(*result_.takeover_s);
        out["takeover_lease_ttl_ms"] = result_.lease_ttl_ms;
    }
    if (result_.direct_rows_per_s && result_.pgbouncer_rows_per_s &&
        *result_.direct_rows_per_s > 0) {
        out["pgbouncer_ratio"] =
            json_fine(*result_.pgbouncer_rows_per_s / *result_.direct_rows_per_s);
    }
    if (result_.outage_duplicates) out["outage_duplicates"] = *result_.outage_duplicates;
    if (result_.switchover_stall_s) {
        out["switchover_stall_s"] = json_fine(*result_.switchover_stall_s);
        out["switchover_duplicates"] = *result_.switchover_duplicates;
    }
}

}  // namespace outboxd::bench
