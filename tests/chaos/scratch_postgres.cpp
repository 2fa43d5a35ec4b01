#include "scratch_postgres.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include "process.hpp"

namespace outboxd::chaos {

namespace fs = std::filesystem;

namespace {

std::string read_first_line(const fs::path& path) {
    std::ifstream in{path};
    std::string line;
    std::getline(in, line);
    return line;
}

// The newest installed server's pg_ctl, as scripts/pgtmp picks it.
std::string find_pg_ctl() {
    std::string found;
    if (!fs::exists("/usr/lib/postgresql")) return found;
    for (const auto& entry : fs::directory_iterator{"/usr/lib/postgresql"}) {
        const auto candidate = entry.path() / "bin" / "pg_ctl";
        if (fs::exists(candidate) && candidate.string() > found) found = candidate.string();
    }
    return found;
}

std::string find_runuser() {
    for (const char* path : {"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"}) {
        if (fs::exists(path)) return path;
    }
    throw std::runtime_error("runuser not found: needed to run pg_ctl as postgres");
}

std::uint16_t port_of(const std::string& url) {
    // postgresql://postgres@127.0.0.1:PORT/postgres
    const auto colon = url.rfind(':');
    const auto slash = url.find('/', colon);
    return static_cast<std::uint16_t>(std::stoi(url.substr(colon + 1, slash - colon - 1)));
}

}  // namespace

ScratchPostgres::ScratchPostgres(std::string pgtmp, std::string dir, std::string log_dir)
    : pgtmp_(std::move(pgtmp)), dir_(std::move(dir)), log_dir_(std::move(log_dir)) {
    pg_ctl_ = find_pg_ctl();
    if (pg_ctl_.empty()) throw std::runtime_error("pg_ctl not found under /usr/lib/postgresql");
    if (run({pgtmp_, "start", dir_}, "pgtmp.log", std::chrono::seconds{120}) != 0) {
        throw std::runtime_error("scripts/pgtmp start failed; see " + log_dir_ + "/pgtmp.log");
    }
    running_ = true;
    url_ = read_first_line(fs::path{dir_} / "url");
    cluster_dir_ = read_first_line(fs::path{dir_} / "cluster");
    port_ = port_of(url_);
}

ScratchPostgres::~ScratchPostgres() { stop(); }

std::string ScratchPostgres::url_via(std::uint16_t port) const {
    const auto colon = url_.rfind(':');
    const auto slash = url_.find('/', colon);
    return url_.substr(0, colon + 1) + std::to_string(port) + url_.substr(slash);
}

bool ScratchPostgres::restart(const std::string& mode) {
    // Without -o, pg_ctl restarts with the options of the last start (postmaster.opts):
    // same port, same settings.
    const auto data = cluster_dir_ + "/data";
    return run(as_cluster_owner({pg_ctl_, "-D", data, "-l", cluster_dir_ + "/server.log", "-w",
                                 "-t", "120", "-m", mode, "restart"}),
               "pg_ctl.log", std::chrono::seconds{180}) == 0;
}

void ScratchPostgres::stop() {
    if (!running_) return;
    running_ = false;
    std::error_code ignored;
    fs::copy_file(cluster_dir_ + "/server.log", log_dir_ + "/postgres.log",
                  fs::copy_options::overwrite_existing, ignored);
    (void)run({pgtmp_, "stop", dir_}, "pgtmp.log", std::chrono::seconds{120});
}

int ScratchPostgres::run(std::vector<std::string> argv, const std::string& log_name,
                         std::chrono::seconds timeout) const {
    // A child process, not system(): Process closes every inherited descriptor, so that the
    // server never holds a proxy's listening socket or a test connection open.
    test::Process command{std::move(argv), {}, log_dir_ + "/" + log_name};
    const auto code = command.wait(timeout);
    return code ? *code : -1;
}

std::vector<std::string> ScratchPostgres::as_cluster_owner(std::vector<std::string> argv) const {
    if (::geteuid() != 0) return argv;
    std::vector<std::string> wrapped{find_runuser(), "-u", "postgres", "--"};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

}  // namespace outboxd::chaos
