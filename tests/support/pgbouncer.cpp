#include "pgbouncer.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "cluster_owner.hpp"
#include "net_client.hpp"

namespace outboxd::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kBinary = "/usr/sbin/pgbouncer";
constexpr int kPortAttempts = 20;

}  // namespace

PgBouncer::PgBouncer(std::string dir, std::uint16_t server_port, std::string pool_mode)
    : dir_(std::move(dir)), server_port_(server_port), pool_mode_(std::move(pool_mode)) {
    if (!fs::exists(kBinary))
        throw std::runtime_error("pgbouncer not installed (" + std::string{kBinary} + ")");
    fs::create_directories(dir_);
    hand_to_cluster_owner(dir_);
    {
        std::ofstream users{dir_ + "/userlist.txt"};
        users << "\"postgres\" \"\"\n";
    }
    hand_to_cluster_owner(dir_ + "/userlist.txt");
    for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
        port_ = free_port();
        try {
            launch();
            return;
        } catch (const std::exception&) {
            if (attempt + 1 == kPortAttempts) throw;
        }
    }
}

PgBouncer::~PgBouncer() {
    if (process_) {
        process_->signal(SIGTERM);
        process_->wait(5s);
    }
}

std::string PgBouncer::url(const std::string& database) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

void PgBouncer::write_config() const {
    const auto path = dir_ + "/pgbouncer.ini";
    {
        std::ofstream ini{path + ".new"};
        ini << "[databases]\n"
            << "* = host=127.0.0.1 port=" << server_port_ << "\n"
            << "[pgbouncer]\n"
            << "listen_addr = 127.0.0.1\n"
            << "listen_port = " << port_ << "\n"
            << "unix_socket_dir =\n"
            << "auth_type = trust\n"
            << "auth_file = " << dir_ << "/userlist.txt\n"
            << "admin_users = postgres\n"
            << "pool_mode = " << pool_mode_ << "\n"
            << "max_client_conn = 2000\n"
            << "default_pool_size = 200\n"
            << "server_reset_query = DISCARD ALL\n"
            << "server_check_delay = 0\n"
            << "server_login_retry = 1\n"
            << "logfile = " << dir_ << "/pgbouncer.log\n"
            << "pidfile = " << dir_ << "/pgbouncer.pid\n";
    }
    hand_to_cluster_owner(path + ".new");
    fs::rename(path + ".new", path);
}

void PgBouncer::launch() {
    write_config();
    process_ =
        std::make_unique<Process>(as_cluster_owner({kBinary, dir_ + "/pgbouncer.ini"}),
                                  std::map<std::string, std::string>{}, dir_ + "/pgbouncer.out");
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!process_->running()) break;
        try {
            pqxx::connection probe{url("postgres")};
            if (probe.is_open()) return;
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(50ms);
    }
    process_.reset();
    throw std::runtime_error("pgbouncer did not start:\n" + log());
}

void PgBouncer::retarget(std::uint16_t server_port) {
    server_port_ = server_port;
    write_config();
    process_->signal(SIGHUP);
}

bool PgBouncer::restart() {
    process_->signal(SIGTERM);
    process_->wait(10s);
    process_.reset();
    try {
        launch();
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

std::string PgBouncer::log() const {
    std::ifstream in{dir_ + "/pgbouncer.log"};
    std::stringstream text;
    text << in.rdbuf();
    std::ifstream out{dir_ + "/pgbouncer.out"};
    text << out.rdbuf();
    return text.str();
}

}  // namespace outboxd::test
