#include "pg_instance.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <pqxx/pqxx>

#include "cluster_owner.hpp"
#include "net_client.hpp"

namespace outboxd::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kStartTimeout = 60s;
constexpr auto kCommandTimeout = 120s;
// A port found free may be taken before the server binds it: try a few.
constexpr int kPortAttempts = 20;

// The server's bin directory, as scripts/pgtmp picks it: the first installed version.
std::string find_bin_dir() {
    std::vector<fs::path> candidates;
    if (fs::exists("/usr/lib/postgresql")) {
        for (const auto& entry : fs::directory_iterator{"/usr/lib/postgresql"}) {
            if (fs::exists(entry.path() / "bin" / "pg_ctl")) candidates.push_back(entry.path());
        }
    }
    if (candidates.empty()) {
        throw std::runtime_error("PostgreSQL server binaries not found under /usr/lib/postgresql");
    }
    std::sort(candidates.begin(), candidates.end());
    return (candidates.front() / "bin").string();
}

std::string read_file(const std::string& path) {
    std::ifstream in{path};
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool accepts_connections(const std::string& url) {
    try {
        pqxx::connection probe{url};
        return probe.is_open();
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace

PgInstance::PgInstance(std::string dir, std::vector<std::string> settings)
    : dir_(std::move(dir)), bin_(find_bin_dir()), settings_(std::move(settings)) {
    make_dir();
    if (run_as_owner({bin_ + "/initdb", "-D", dir_ + "/data", "-U", "postgres", "-A", "trust", "-E",
                      "UTF8", "--locale=C.UTF-8", "--no-sync"},
                     "initdb.log") != 0) {
        throw std::runtime_error("initdb failed:\n" + read_file(dir_ + "/initdb.log"));
    }
    launch_on_free_port();
}

PgInstance::PgInstance(StandbyTag, const PgInstance& primary, std::string dir)
    : dir_(std::move(dir)), bin_(primary.bin_), settings_(primary.settings_) {
    make_dir();
    // initdb's trust rules admit replication connections from 127.0.0.1.
    if (run_as_owner({bin_ + "/pg_basebackup", "-D", dir_ + "/data", "-h", "127.0.0.1", "-p",
                      std::to_string(primary.port()), "-U", "postgres", "-R", "-X", "stream", "-c",
                      "fast", "--no-sync"},
                     "basebackup.log") != 0) {
        throw std::runtime_error("pg_basebackup failed:\n" + read_file(dir_ + "/basebackup.log"));
    }
    launch_on_free_port();
}

std::unique_ptr<PgInstance> PgInstance::standby_of(const PgInstance& primary, std::string dir) {
    return std::unique_ptr<PgInstance>{new PgInstance{StandbyTag{}, primary, std::move(dir)}};
}

void PgInstance::make_dir() const {
    fs::create_directories(dir_);
    hand_to_cluster_owner(dir_);
}

void PgInstance::launch_on_free_port() {
    for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
        port_ = free_port();
        if (launch()) return;
    }
    throw std::runtime_error("PostgreSQL did not start:\n" + log());
}

void PgInstance::promote() {
    if (run_as_owner({bin_ + "/pg_ctl", "-D", dir_ + "/data", "-w", "-t", "60", "promote"},
                     "promote.log") != 0) {
        throw std::runtime_error("pg_ctl promote failed:\n" + read_file(dir_ + "/promote.log"));
    }
}

PgInstance::~PgInstance() {
    // SIGINT is the fast shutdown pg_ctl stop -m fast asks for; the Process destructor
    // kills what is left.
    if (running()) {
        server_->signal(SIGINT);
        (void)server_->wait(30s);
    }
    server_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
}

std::string PgInstance::url(const std::string& database) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

void PgInstance::stop() {
    if (!running()) throw std::runtime_error("PostgreSQL is not running");
    const int code = run_as_owner(
        {bin_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "fast", "-w", "-t", "60", "stop"},
        "pg_ctl.log");
    if (code != 0 || !server_->wait(30s)) {
        throw std::runtime_error("pg_ctl stop -m fast failed:\n" + read_file(dir_ + "/pg_ctl.log"));
    }
    server_.reset();
}

void PgInstance::start() {
    if (running()) throw std::runtime_error("PostgreSQL is running already");
    if (!launch()) {
        throw std::runtime_error("PostgreSQL did not start again on port " + std::to_string(port_) +
                                 ":\n" + log());
    }
}

bool PgInstance::running() const { return server_ && server_->running(); }

std::string PgInstance::log() const { return read_file(dir_ + "/server.log"); }

bool PgInstance::launch() {
    std::vector<std::string> argv{bin_ + "/postgres",
                                  "-D",
                                  dir_ + "/data",
                                  "-p",
                                  std::to_string(port_),
                                  "-c",
                                  "listen_addresses=127.0.0.1",
                                  "-c",
                                  "unix_socket_directories=" + dir_,
                                  "-c",
                                  "max_connections=400",
                                  "-c",
                                  "fsync=off",
                                  "-c",
                                  "synchronous_commit=off",
                                  "-c",
                                  "full_page_writes=off"};
    for (const auto& setting : settings_) {
        argv.emplace_back("-c");
        argv.push_back(setting);
    }
    server_ = std::make_unique<Process>(as_cluster_owner(std::move(argv)),
                                        std::map<std::string, std::string>{}, dir_ + "/server.log");
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (server_->running()) {
        if (accepts_connections(url())) return true;
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error("PostgreSQL did not accept connections in time:\n" + log());
        }
        std::this_thread::sleep_for(100ms);
    }
    server_.reset();
    return false;
}

int PgInstance::run_as_owner(std::vector<std::string> argv, const std::string& log_name) const {
    return run_command(as_cluster_owner(std::move(argv)), dir_ + "/" + log_name, kCommandTimeout);
}

}  // namespace outboxd::test
