#include "cluster_owner.hpp"

#include <filesystem>
#include <stdexcept>

#include <pwd.h>
#include <unistd.h>

#include "process.hpp"

namespace outboxd::test {

namespace {

constexpr const char* kOwner = "postgres";
constexpr const char* kSetpriv = "/usr/bin/setpriv";

}  // namespace

std::vector<std::string> as_cluster_owner(std::vector<std::string> argv) {
    if (::geteuid() != 0) return argv;
    if (!std::filesystem::exists(kSetpriv)) {
        throw std::runtime_error("setpriv (util-linux) not found: needed to run as postgres");
    }
    // setpriv changes user and execs in place (runuser would fork), and sets the
    // parent-death signal again after the change of user cleared it.
    std::vector<std::string> wrapped{kSetpriv,
                                     std::string{"--reuid="} + kOwner,
                                     std::string{"--regid="} + kOwner,
                                     "--init-groups",
                                     "--pdeathsig=KILL",
                                     "--"};
    wrapped.insert(wrapped.end(), std::make_move_iterator(argv.begin()),
                   std::make_move_iterator(argv.end()));
    return wrapped;
}

void hand_to_cluster_owner(const std::string& path) {
    if (::geteuid() != 0) return;
    const passwd* owner = ::getpwnam(kOwner);
    if (owner == nullptr || ::chown(path.c_str(), owner->pw_uid, owner->pw_gid) != 0) {
        throw std::runtime_error("cannot hand " + path + " to the postgres user");
    }
}

int run_command(std::vector<std::string> argv, const std::string& log_path,
                std::chrono::seconds timeout) {
    Process command{std::move(argv), {}, log_path};
    const auto code = command.wait(timeout);
    return code ? *code : -1;
}

}  // namespace outboxd::test
