#include "outboxd/app/embedded_postgres.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <unistd.h>

namespace outboxd::app {
namespace {

namespace fs = std::filesystem;

constexpr int kFirstPort = 54329;

std::string pg_bin() {
    std::vector<fs::path> found;
    if (fs::exists("/usr/lib/postgresql")) {
        for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql")) {
            if (fs::exists(entry.path() / "bin" / "pg_ctl")) found.push_back(entry.path() / "bin");
        }
    }
    if (found.empty()) {
        throw std::runtime_error(
            "demo mode needs PostgreSQL server binaries (apt-get install postgresql), or set "
            "OUTBOXD_DATABASE_URL");
    }
    std::sort(found.begin(), found.end());
    return found.back().string();
}

std::string quote(const std::string& text) {
    std::string out = "'";
    for (const char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

// PostgreSQL refuses to run as root: run its tools as the postgres OS user then.
std::string as_owner(const std::string& command) {
    return ::geteuid() == 0 ? "runuser -u postgres -- " + command : command;
}

int run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

}  // namespace

std::string default_embedded_dir() {
    if (const char* dir = std::getenv("OUTBOXD_EMBEDDED_PG_DIR"); dir && *dir) return dir;
    return "/tmp/outboxd-embedded-pg-" + std::to_string(::geteuid());
}

std::string ensure_embedded_postgres(const std::string& dir) {
    const std::string bin = pg_bin();
    const fs::path root{dir};
    const fs::path data = root / "data";
    const fs::path url_file = root / "url";
    fs::create_directories(root);
    // Only its user may read it (the data, the socket, the log).
    fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
    if (::geteuid() == 0) run("chown postgres:postgres " + quote(root.string()));
    spdlog::warn(
        "event=embedded_database dir={} reason=\"no OUTBOXD_DATABASE_URL: a demo database on "
        "127.0.0.1 that any local user can connect to; set OUTBOXD_DATABASE_URL in production\"",
        root.string());

    if (!fs::exists(data / "PG_VERSION")) {
        spdlog::info("event=embedded_initdb dir={}", data.string());
        if (run(as_owner(quote(bin + "/initdb") + " -D " + quote(data.string()) +
                         " -U postgres -A trust -E UTF8 --locale=C.UTF-8")) != 0) {
            throw std::runtime_error("initdb failed for the embedded database in " + dir);
        }
    }
    const std::string status =
        as_owner(quote(bin + "/pg_ctl") + " -D " + quote(data.string()) + " status");
    if (run(status) == 0 && fs::exists(url_file)) {
        std::ifstream in{url_file};
        std::string url;
        std::getline(in, url);
        if (!url.empty()) return url;
    }
    for (int port = kFirstPort; port < kFirstPort + 50; ++port) {
        const std::string options = "-c listen_addresses=127.0.0.1 -c max_connections=300 -p " +
                                    std::to_string(port) + " -k " + root.string();
        const std::string start = as_owner(quote(bin + "/pg_ctl") + " -D " + quote(data.string()) +
                                           " -l " + quote((root / "server.log").string()) +
                                           " -w -t 60 -o " + quote(options) + " start");
        if (run(start) == 0) {
            std::string url =
                "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/postgres";
            std::ofstream{url_file} << url << "\n";
            spdlog::info("event=embedded_started url={} stop_with=\"{} -D {} stop\"", url,
                         bin + "/pg_ctl", data.string());
            return url;
        }
    }
    throw std::runtime_error("could not start the embedded database; see " +
                             (root / "server.log").string());
}

}  // namespace outboxd::app
