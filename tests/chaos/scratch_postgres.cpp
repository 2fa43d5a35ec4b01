#include "scratch_postgres.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <pqxx/pqxx>

#include "chaos_clock.hpp"
#include "cluster_owner.hpp"
#include "database_url.hpp"
#include "net_client.hpp"

namespace outboxd::chaos {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds kPgtmpTimeout{120};
constexpr std::chrono::seconds kSynchronousTimeout{60};
// A port found free may be taken before the standby binds it: try a few.
constexpr int kPortAttempts = 5;

std::string read_first_line(const fs::path& path) {
    std::ifstream in{path};
    std::string line;
    std::getline(in, line);
    return line;
}

// The newest installed server's binaries, as scripts/pgtmp picks them.
std::string find_bin_dir() {
    std::string found;
    if (fs::exists("/usr/lib/postgresql")) {
        for (const auto& entry : fs::directory_iterator{"/usr/lib/postgresql"}) {
            const auto candidate = entry.path() / "bin";
            if (fs::exists(candidate / "pg_ctl") && candidate.string() > found) {
                found = candidate.string();
            }
        }
    }
    if (found.empty()) throw std::runtime_error("pg_ctl not found under /usr/lib/postgresql");
    return found;
}

std::uint16_t port_of(const std::string& url) {
    // postgresql://postgres@127.0.0.1:PORT/postgres
    const auto colon = url.rfind(':');
    const auto slash = url.find('/', colon);
    return static_cast<std::uint16_t>(std::stoi(url.substr(colon + 1, slash - colon - 1)));
}

// scripts/pgtmp's settings (without --durable), which a standby of its server needs too: a
// hot standby refuses to start with fewer connections than its primary. A standby retries
// its primary every second rather than every five: every commit waits for it, so each
// restart of the primary would otherwise stall commits that much longer.
std::string standby_options(const std::string& socket_dir) {
    return "-c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB"
           " -c unix_socket_directories=" +
           socket_dir +
           " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
           " -c wal_retrieve_retry_interval=1s";
}

}  // namespace

ScratchPostgres::ScratchPostgres(std::string pgtmp, std::string dir, std::string log_dir)
    : pgtmp_(std::move(pgtmp)),
      dir_(std::move(dir)),
      log_dir_(std::move(log_dir)),
      bin_dir_(find_bin_dir()) {
    if (test::run_command({pgtmp_, "start", dir_}, log_dir_ + "/pgtmp.log", kPgtmpTimeout) != 0) {
        throw std::runtime_error("scripts/pgtmp start failed; see " + log_dir_ + "/pgtmp.log");
    }
    running_ = true;
    cluster_dir_ = read_first_line(fs::path{dir_} / "cluster");
    servers_.emplace_back(bin_dir_, cluster_dir_ + "/data", cluster_dir_ + "/server.log",
                          port_of(read_first_line(fs::path{dir_} / "url")), log_dir_);
    logs_.push_back({cluster_dir_ + "/server.log", 0, 0});
}

ScratchPostgres::~ScratchPostgres() { stop(); }

std::vector<std::uint16_t> ScratchPostgres::ports() const {
    std::vector<std::uint16_t> out;
    for (const auto& server : servers_) out.push_back(server.port());
    return out;
}

std::string ScratchPostgres::writable_url() const { return database_url(ports()); }

std::string ScratchPostgres::name(std::size_t server) const {
    return servers_.size() == 1 ? "postgres" : "pg-" + std::to_string(server + 1);
}

void ScratchPostgres::add_standby() {
    if (servers_.size() > 1) throw std::logic_error("a standby was added already");
    servers_.emplace_back(bin_dir_, "", "", 0, log_dir_);
    for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
        if (start_standby(1, test::free_port())) {
            if (!make_synchronous()) {
                throw std::runtime_error("the standby did not become synchronous; see " + log_dir_ +
                                         "/pg-2.log");
            }
            return;
        }
    }
    throw std::runtime_error("the standby did not start; see " + log_dir_ + "/pg_ctl.log");
}

bool ScratchPostgres::restart(const std::string& mode) { return servers_[primary_].restart(mode); }

bool ScratchPostgres::stop_primary() { return servers_[primary_].stop("fast"); }

bool ScratchPostgres::start_primary() {
    // A stopped server's restart is a start with the options of its last one.
    return servers_[primary_].restart("fast");
}

bool ScratchPostgres::promote_standby() {
    if (!has_standby()) return false;
    const auto standby = 1 - primary_;
    down_ = primary_;
    if (!servers_[standby].promote()) return false;
    primary_ = standby;
    return true;
}

bool ScratchPostgres::rebuild_standby() {
    if (!down_) return false;
    const auto index = *down_;
    const auto old_data = servers_[index].data_dir();
    if (!start_standby(index, servers_[index].port())) return false;
    std::error_code ignored;
    fs::remove_all(old_data, ignored);
    down_.reset();
    return make_synchronous();
}

void ScratchPostgres::stop() {
    if (!running_) return;
    running_ = false;
    // The primary first: its shutdown waits for the standby to have received everything.
    (void)servers_[primary_].stop("fast");
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (i != primary_ && down_ != i) (void)servers_[i].stop("fast");
    }
    for (const auto& log : logs_) {
        auto copy = log_dir_ + "/" + name(log.server);
        if (log.generation > 0) copy.append(".").append(std::to_string(log.generation));
        std::error_code ignored;
        fs::copy_file(log.path, copy + ".log", fs::copy_options::overwrite_existing, ignored);
    }
    (void)test::run_command({pgtmp_, "stop", dir_}, log_dir_ + "/pgtmp.log", kPgtmpTimeout);
}

bool ScratchPostgres::start_standby(std::size_t index, std::uint16_t port) {
    // Beside pgtmp's data directory, so that deleting the cluster deletes it too, and where
    // the cluster owner may create it.
    const auto base = cluster_dir_ + "/server-" + std::to_string(++data_dirs_);
    const PgServer standby{bin_dir_, base, base + ".log", port, log_dir_};
    const int generation = static_cast<int>(std::count_if(
        logs_.begin(), logs_.end(), [&](const ServerLog& log) { return log.server == index; }));
    logs_.push_back({standby.server_log(), index, generation});
    if (!standby.clone_from(servers_[primary_].port()) ||
        !standby.start(standby_options(cluster_dir_))) {
        std::error_code ignored;
        fs::remove_all(base, ignored);
        return false;
    }
    servers_[index] = standby;
    return true;
}

bool ScratchPostgres::make_synchronous() const {
    try {
        pqxx::connection connection{url()};
        pqxx::nontransaction tx{connection};
        // synchronous_commit is on already: migrate() set it on the database, which outranks
        // the server's command line (pgtmp turns it off there, and so does the standby's).
        tx.exec("ALTER SYSTEM SET synchronous_standby_names = '*'");
        tx.exec("SELECT pg_reload_conf()");
        return await_condition(
            [&] {
                return tx.exec(
                             "SELECT count(*) FROM pg_stat_replication WHERE sync_state = "
                             "'sync'")[0][0]
                           .as<int>() > 0;
            },
            kSynchronousTimeout);
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace outboxd::chaos
