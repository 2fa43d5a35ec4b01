// The example worker binary (build/bin/outboxd-worker) against a scripted node: each demo
// activity, the received log and stats file, and a clean stop on SIGTERM.

#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_node.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using namespace outboxd::sdk::testing;
namespace fs = std::filesystem;

// The worker binary sits next to this test binary (both in build/bin).
fs::path worker_binary() {
    return fs::read_symlink("/proc/self/exe").parent_path() / "outboxd-worker";
}

// A child process, killed if the test leaves without waiting for it.
class Child {
public:
    explicit Child(const std::vector<std::string>& args) {
        std::vector<char*> argv;
        for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        if (::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
    }
    ~Child() {
        if (pid_ > 0 && !status_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    [[nodiscard]] bool running() const { return pid_ > 0 && !status_; }
    void signal(int number) const { ::kill(pid_, number); }
    // The exit status once the child has ended, polled until `timeout`.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
        eventually(
            [this] {
                int status = 0;
                if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
                return status_.has_value();
            },
            timeout);
        if (!status_ || !WIFEXITED(*status_)) return std::nullopt;
        return WEXITSTATUS(*status_);
    }

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
};

std::string read_file(const fs::path& path) {
    std::ifstream file{path};
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

std::optional<nlohmann::json> answer_for(const FakeNode& node, const std::string& task_id) {
    for (const auto& frame : node.frames(0)) {
        const auto type = frame.value("type", "");
        if ((type == "complete" || type == "fail") && frame.value("task_id", "") == task_id) {
            return frame;
        }
    }
    return std::nullopt;
}

}  // namespace

TEST_CASE("the example worker runs the demo activities and stops cleanly on SIGTERM",
          "[sdk][e2e]") {
    if (!fs::exists(worker_binary())) {
        FAIL("outboxd-worker is not built next to sdk_tests");
        return;
    }
    const fs::path dir =
        fs::temp_directory_path() / ("outboxd-worker-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto stats_file = dir / "stats.json";
    const auto received_log = dir / "received.log";
    fs::remove(stats_file);
    fs::remove(received_log);

    FakeNode node;
    Child worker{{worker_binary().string(), "--url", node.url(), "--worker-id", "example-1",
                  "--max-in-flight", "8", "--seed", "7", "--stop-grace-ms", "200", "--log-level",
                  "warn", "--stats-file", stats_file.string(), "--received-log",
                  received_log.string()}};
    REQUIRE(worker.running());
    REQUIRE(eventually([&] { return !node.frames_of_type(0, "hello").empty(); }));
    const auto hello = node.frames_of_type(0, "hello").front();
    CHECK(hello["worker_id"] == "example-1");
    CHECK(hello["max_in_flight"] == 8);
    CHECK(hello["namespaces"] == nlohmann::json({"default"}));
    CHECK(hello["activity_types"] == nlohmann::json({"echo", "sleep", "fail-sometimes", "noop"}));

    node.send(0, task_frame("noop", "noop"));
    node.send(0, task_frame("echo", "echo", R"({"a":[1,"x"]})"));
    node.send(0, task_frame("sleep", "sleep", R"({"ms":50})"));
    node.send(0, task_frame("always-fails", "fail-sometimes", R"({"p":1})", 2));
    node.send(0, task_frame("never-fails", "fail-sometimes", R"({"p":0})"));
    node.send(0, task_frame("unknown", "paint"));
    node.send(0, task_frame("bad-sleep", "sleep", R"({"ms":"long"})"));
    const std::vector<std::string> ids{"noop",        "echo",    "sleep",    "always-fails",
                                       "never-fails", "unknown", "bad-sleep"};
    REQUIRE(eventually([&] {
        return std::all_of(ids.begin(), ids.end(),
                           [&](const auto& id) { return answer_for(node, id).has_value(); });
    }));
    CHECK((*answer_for(node, "noop"))["result"].is_null());
    CHECK((*answer_for(node, "echo"))["result"] == nlohmann::json::parse(R"({"a":[1,"x"]})"));
    CHECK((*answer_for(node, "sleep"))["type"] == "complete");
    CHECK((*answer_for(node, "never-fails"))["type"] == "complete");
    const auto failed = *answer_for(node, "always-fails");
    CHECK(failed["type"] == "fail");
    CHECK(failed["retryable"] == true);
    const auto unknown = *answer_for(node, "unknown");
    CHECK(unknown["type"] == "fail");
    CHECK(unknown["retryable"] == false);
    CHECK((*answer_for(node, "bad-sleep"))["retryable"] == false);

    // A long sleep is still running at SIGTERM: after the grace period it is failed.
    node.send(0, task_frame("long-sleep", "sleep", R"({"ms":60000})"));
    REQUIRE(eventually(
        [&] { return read_file(received_log).find("wf-long-sleep:0:1\n") != std::string::npos; }));
    worker.signal(SIGTERM);
    CHECK(worker.wait_exit(5s) == 0);
    const auto stopped = answer_for(node, "long-sleep");
    REQUIRE(stopped.has_value());
    CHECK((*stopped)["error"] == "worker stopping");

    CHECK(read_file(received_log) ==
          "wf-noop:0:1\nwf-echo:0:1\nwf-sleep:0:1\nwf-always-fails:0:2\nwf-never-fails:0:1\n"
          "wf-unknown:0:1\nwf-bad-sleep:0:1\nwf-long-sleep:0:1\n");
    const auto stats = nlohmann::json::parse(read_file(stats_file));
    CHECK(stats["received"] == 8);
    CHECK(stats["completed"] == 4);
    CHECK(stats["failed"] == 4);
    fs::remove_all(dir);
}

TEST_CASE("the example worker refuses bad flags with exit code 2", "[sdk][e2e]") {
    if (!fs::exists(worker_binary())) {
        FAIL("outboxd-worker is not built next to sdk_tests");
        return;
    }
    Child bad_number{{worker_binary().string(), "--max-in-flight", "lots"}};
    CHECK(bad_number.wait_exit(5s) == 2);
    Child bad_url{{worker_binary().string(), "--url", "http://127.0.0.1:1/"}};
    CHECK(bad_url.wait_exit(5s) == 2);
}
