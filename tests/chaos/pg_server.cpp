#include "pg_server.hpp"

#include <vector>

#include "cluster_owner.hpp"

namespace outboxd::chaos {

namespace {

constexpr std::chrono::seconds kCommandTimeout{180};
constexpr const char* kWaitSeconds = "120";

}  // namespace

PgServer::PgServer(std::string bin_dir, std::string data_dir, std::string server_log,
                   std::uint16_t port, std::string log_dir)
    : bin_dir_(std::move(bin_dir)),
      data_dir_(std::move(data_dir)),
      server_log_(std::move(server_log)),
      port_(port),
      log_dir_(std::move(log_dir)) {}

std::string PgServer::url() const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

bool PgServer::clone_from(std::uint16_t primary_port) const {
    // initdb -A trust admits replication connections from 127.0.0.1.
    return test::run_command(test::as_cluster_owner(
                                 {bin_dir_ + "/pg_basebackup", "-D", data_dir_, "-h", "127.0.0.1",
                                  "-p", std::to_string(primary_port), "-U", "postgres", "-R", "-X",
                                  "stream", "-c", "fast", "--no-sync"}),
                             log_dir_ + "/pg_ctl.log", kCommandTimeout) == 0;
}

bool PgServer::start(const std::string& options) const {
    return pg_ctl({"-l", server_log_, "-w", "-t", kWaitSeconds, "-o",
                   options + " -p " + std::to_string(port_), "start"});
}

bool PgServer::restart(const std::string& mode) const {
    // Without -o, pg_ctl restart starts the server with the options of its last start
    // (postmaster.opts), stopped or not.
    return pg_ctl({"-l", server_log_, "-w", "-t", kWaitSeconds, "-m", mode, "restart"});
}

bool PgServer::stop(const std::string& mode) const {
    return pg_ctl({"-w", "-t", kWaitSeconds, "-m", mode, "stop"});
}

bool PgServer::promote() const { return pg_ctl({"-w", "-t", kWaitSeconds, "promote"}); }

bool PgServer::pg_ctl(std::vector<std::string> args) const {
    std::vector<std::string> argv{bin_dir_ + "/pg_ctl", "-D", data_dir_};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_command(test::as_cluster_owner(std::move(argv)), log_dir_ + "/pg_ctl.log",
                             kCommandTimeout) == 0;
}

}  // namespace outboxd::chaos
