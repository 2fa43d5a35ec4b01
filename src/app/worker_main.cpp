// outboxd-worker: the example worker (README, "Configuration"). Runs demo activities through the
// worker SDK: noop, echo, sleep, fail-sometimes. For tests it can write its statistics to a JSON
// file and log every delivery it receives (dispatch_key:attempt, one line each, append-only)
// so that duplicate deliveries can be counted, even after kill -9. The delivery log adds
// timestamps, task ids and answers, for the chaos harness (tests/chaos) to match deliveries
// and outcomes against faults.
//
// Exit codes: 0 after a clean stop (SIGTERM/SIGINT), 2 for invalid flags or settings.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/sdk/worker_client.hpp"
#include "outboxd/util/secret_file.hpp"

namespace {

namespace net = boost::asio;
namespace protocol = outboxd::worker::protocol;
namespace util = outboxd::util;
using outboxd::sdk::Responder;
using outboxd::sdk::WorkerClient;
using outboxd::sdk::WorkerOptions;
using outboxd::sdk::WorkerStats;

constexpr int kExitInvalidSettings = 2;
constexpr std::chrono::seconds kStatsInterval{1};
constexpr std::int64_t kDefaultSleepMs = 100;
// How often a sleep without heartbeats looks whether it was cancelled.
constexpr std::chrono::milliseconds kSleepSlice{100};
constexpr double kDefaultFailProbability = 0.3;

struct WorkerSettings {
    WorkerOptions client;
    std::chrono::milliseconds stop_grace{5000};
    std::string log_level = "info";
    std::string stats_file;    // empty: none
    std::string received_log;  // empty: none
    std::string delivery_log;  // empty: none
    std::uint64_t seed = 0;
    std::size_t result_bytes = 0;  // noop's result: a JSON string this long; 0: null
};

// A settings problem found after parsing; the message names the flag.
struct InvalidSetting : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string default_worker_id() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return std::string{host[0] ? host : "worker"} + "-" + std::to_string(::getpid());
}

// Fills `settings` from argv and the environment. Returns an exit code when the process
// should end at once (--help, bad flags).
std::optional<int> parse_command_line(int argc, char** argv, WorkerSettings& settings) {
    CLI::App app{"outboxd example worker: runs noop, echo, sleep and fail-sometimes tasks"};
    auto& client = settings.client;
    client.seed_urls = {"ws://127.0.0.1:8080/v1/workers"};
    client.activity_types = {"echo", "sleep", "fail-sometimes", "noop"};
    std::string node;
    std::string token;
    std::string ca_file;
    std::int64_t stop_grace_ms = settings.stop_grace.count();

    const auto ws_url = CLI::Validator(
        [](std::string& url) {
            const bool plain = url.rfind("ws://", 0) == 0 && url.size() > 5;
            const bool tls = url.rfind("wss://", 0) == 0 && url.size() > 6;
            return plain || tls ? std::string{} : "must be a ws:// or wss://host:port/path URL";
        },
        "WS-URL");
    app.add_option("--url", client.seed_urls, "node URL(s) to connect to; repeat or comma-separate")
        ->envname("OUTBOXD_WORKER_URL")
        ->delimiter(',')
        ->check(ws_url)
        ->capture_default_str();
    app.add_option("--worker-id", client.worker_id, "worker name (default hostname-pid)")
        ->envname("OUTBOXD_WORKER_ID");
    app.add_option("--namespaces", client.namespaces, "namespaces served, comma-separated")
        ->envname("OUTBOXD_WORKER_NAMESPACES")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--task-queue", client.task_queue, "task queue served")
        ->envname("OUTBOXD_WORKER_TASK_QUEUE")
        ->capture_default_str();
    auto* node_option =
        app.add_option("--node", node, "this worker's node label")->envname("OUTBOXD_WORKER_NODE");
    app.add_option("--activity-types", client.activity_types, "activity types run, comma-separated")
        ->envname("OUTBOXD_WORKER_ACTIVITY_TYPES")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--max-in-flight", client.max_in_flight, "tasks run at once, over all nodes")
        ->envname("OUTBOXD_WORKER_MAX_IN_FLIGHT")
        ->capture_default_str()
        ->check(CLI::Range(1, protocol::kMaxCreditWindow));
    app.add_option("--batch-frames", client.batch_frames,
                   "exchange batch frames with nodes that read them (true/false)")
        ->envname("OUTBOXD_WORKER_BATCH_FRAMES")
        ->capture_default_str();
    auto* token_option =
        app.add_option("--token", token, "worker bearer token")->envname("OUTBOXD_WORKER_TOKEN");
    std::string token_file;
    auto* token_file_option =
        app.add_option("--token-file", token_file,
                       "read the worker bearer token from this file (trailing line breaks "
                       "trimmed) instead of --token")
            ->envname("OUTBOXD_WORKER_TOKEN_FILE")
            ->excludes(token_option);
    auto* ca_option = app.add_option("--ca-file", ca_file,
                                     "PEM CA certificates for wss:// nodes (default: the system's)")
                          ->envname("OUTBOXD_WORKER_CA_FILE")
                          ->check(CLI::ExistingFile);
    app.add_option("--log-level", settings.log_level, "debug, info, warn or error")
        ->envname("OUTBOXD_LOG_LEVEL")
        ->capture_default_str()
        ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
    app.add_option("--stop-grace-ms", stop_grace_ms, "time in-flight tasks get on stop")
        ->envname("OUTBOXD_WORKER_STOP_GRACE_MS")
        ->capture_default_str()
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{3600000}));
    app.add_option("--stats-file", settings.stats_file, "write JSON statistics here every second")
        ->envname("OUTBOXD_WORKER_STATS_FILE");
    app.add_option("--received-log", settings.received_log,
                   "append dispatch_key:attempt of every task received")
        ->envname("OUTBOXD_WORKER_RECEIVED_LOG");
    app.add_option("--delivery-log", settings.delivery_log,
                   "append 'deliver|complete|fail <unix_ms> <task_id> <dispatch_key> "
                   "[attempt]' for every task received and answered")
        ->envname("OUTBOXD_WORKER_DELIVERY_LOG");
    auto* seed_option = app.add_option("--seed", settings.seed, "seed of fail-sometimes draws")
                            ->envname("OUTBOXD_WORKER_SEED");
    app.add_option("--result-bytes", settings.result_bytes,
                   "noop answers with a JSON string result of this many bytes (0: null)")
        ->envname("OUTBOXD_WORKER_RESULT_BYTES")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{0}, std::size_t{16} << 20));

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        std::cerr << "outboxd-worker: " << error.what() << "\n";
        return kExitInvalidSettings;
    }
    if (client.worker_id.empty()) client.worker_id = default_worker_id();
    if (*node_option) client.node = node;
    if (*token_option) {
        if (token.empty())
            throw InvalidSetting{"--token (OUTBOXD_WORKER_TOKEN): must not be empty"};
        client.token = token;
    }
    if (*token_file_option) {
        try {
            client.token = util::read_secret_file(token_file);
        } catch (const std::runtime_error& error) {
            throw InvalidSetting{std::string{"--token-file (OUTBOXD_WORKER_TOKEN_FILE): "} +
                                 error.what()};
        }
    }
    if (*ca_option) client.ca_file = ca_file;
    if (!*seed_option) settings.seed = std::random_device{}();
    settings.stop_grace = std::chrono::milliseconds{stop_grace_ms};
    return std::nullopt;
}

// Append-only log file. One write(2) per line on an O_APPEND descriptor, no user-space
// buffer: a line is in the kernel once append returns, so it survives kill -9 of this
// process, and lines written from several threads never interleave.
class AppendLog {
public:
    // `flag` names the setting in the error when the file cannot be opened.
    AppendLog(const std::string& path, const char* flag) {
        if (path.empty()) return;
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd_ < 0) throw InvalidSetting{std::string{flag} + ": cannot open '" + path + "'"};
    }
    ~AppendLog() {
        if (fd_ >= 0) ::close(fd_);
    }
    AppendLog(const AppendLog&) = delete;
    AppendLog& operator=(const AppendLog&) = delete;

    [[nodiscard]] bool enabled() const { return fd_ >= 0; }
    void append(const std::string& line) const {
        if (fd_ < 0) return;
        if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
            spdlog::warn("append log: short write of '{}'", line.substr(0, line.size() - 1));
        }
    }

private:
    int fd_ = -1;
};

// `dispatch_key:attempt` of every task received.
class ReceivedLog {
public:
    explicit ReceivedLog(const std::string& path)
        : log_(path, "--received-log (OUTBOXD_WORKER_RECEIVED_LOG)") {}

    void record(const protocol::Task& task) const {
        log_.append(task.dispatch_key + ":" + std::to_string(task.attempt) + "\n");
    }

private:
    AppendLog log_;
};

// Every delivery and every answer with its time, one line each:
//   deliver <unix_ms> <task_id> <dispatch_key> <attempt>
//   complete <unix_ms> <task_id> <dispatch_key>
//   fail <unix_ms> <task_id> <dispatch_key>
// An answer's line is written before the answer is handed to the client: whatever outcome
// a node applies for a task id, that id's line is already in the file, even when this
// process dies right after sending. Times never go back within one process, so a delivery
// always precedes its answer in the file and in time.
class DeliveryLog {
public:
    explicit DeliveryLog(const std::string& path)
        : log_(path, "--delivery-log (OUTBOXD_WORKER_DELIVERY_LOG)") {}

    void delivered(const protocol::Task& task) const {
        if (!log_.enabled()) return;
        log_.append("deliver " + std::to_string(now_ms()) + " " + task.task_id + " " +
                    task.dispatch_key + " " + std::to_string(task.attempt) + "\n");
    }
    void answered(const char* kind, const std::string& task_id,
                  const std::string& dispatch_key) const {
        if (!log_.enabled()) return;
        log_.append(std::string{kind} + " " + std::to_string(now_ms()) + " " + task_id + " " +
                    dispatch_key + "\n");
    }

private:
    std::int64_t now_ms() const {
        const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
        std::int64_t last = last_ms_.load();
        while (wall > last && !last_ms_.compare_exchange_weak(last, wall)) {
        }
        return std::max(wall, last);
    }

    AppendLog log_;
    mutable std::atomic<std::int64_t> last_ms_{0};
};

// A task's Responder that records the answer in the delivery log first.
class Answer {
public:
    Answer(Responder responder, const DeliveryLog& log, const protocol::Task& task)
        : responder_(std::move(responder)),
          log_(&log),
          task_id_(task.task_id),
          dispatch_key_(task.dispatch_key) {}

    void complete(std::string result_json = "null") {
        log_->answered("complete", task_id_, dispatch_key_);
        responder_.complete(std::move(result_json));
    }
    void fail(std::string error, bool retryable) {
        log_->answered("fail", task_id_, dispatch_key_);
        responder_.fail(std::move(error), retryable);
    }
    void heartbeat(std::string progress_json) { responder_.heartbeat(std::move(progress_json)); }
    [[nodiscard]] bool cancelled() const { return responder_.cancelled(); }

private:
    Responder responder_;
    const DeliveryLog* log_;
    std::string task_id_;
    std::string dispatch_key_;
};

// A draw in [0, 1) that depends only on the seed and the delivery, so a run can be replayed
// whatever order tasks arrive in: FNV-1a over the inputs, then a splitmix64 finaliser.
double uniform_draw(std::uint64_t seed, const std::string& dispatch_key, std::int64_t attempt) {
    std::uint64_t hash = 0xcbf29ce484222325ULL ^ seed;
    const auto mix_in = [&hash](unsigned char byte) { hash = (hash ^ byte) * 0x100000001b3ULL; };
    for (const char c : dispatch_key) mix_in(static_cast<unsigned char>(c));
    for (int shift = 0; shift < 32; shift += 8)
        mix_in(static_cast<unsigned char>(attempt >> shift));
    hash ^= hash >> 30;
    hash *= 0xbf58476d1ce4e5b9ULL;
    hash ^= hash >> 27;
    hash *= 0x94d049bb133111ebULL;
    hash ^= hash >> 31;
    return static_cast<double>(hash >> 11) * 0x1.0p-53;
}

// A number field of the task input, the default when the input is null or lacks it;
// nullopt when it is there but not a number in [lo, hi].
std::optional<double> input_number(const protocol::Task& task, const char* name, double fallback,
                                   double lo, double hi) {
    const auto input = nlohmann::json::parse(task.input_json, nullptr, false);
    if (input.is_null() || (input.is_object() && !input.contains(name))) return fallback;
    if (!input.is_object() || !input[name].is_number()) return std::nullopt;
    const auto value = input[name].get<double>();
    if (value < lo || value > hi) return std::nullopt;
    return value;
}

// Runs the demo activities. Called on the SDK's network thread, so nothing here blocks:
// sleeps are timers on a thread of their own.
class Activities {
public:
    Activities(std::uint64_t seed, std::size_t result_bytes)
        : seed_(seed),
          noop_result_(result_bytes < 2 ? std::string{"null"}
                                        : '"' + std::string(result_bytes - 2, 'r') + '"'),
          work_(timers_.get_executor()) {
        thread_ = std::thread([this] { timers_.run(); });
    }
    ~Activities() { stop(); }
    Activities(const Activities&) = delete;
    Activities& operator=(const Activities&) = delete;

    // Pending sleeps are dropped; the client has failed their tasks already when it stopped.
    void stop() {
        if (!thread_.joinable()) return;
        timers_.stop();
        thread_.join();
    }

    void run(const protocol::Task& task, Answer answer) {
        const auto& type = task.activity_type;
        if (type == "noop") return answer.complete(noop_result_);
        if (type == "echo") return answer.complete(task.input_json);
        if (type == "sleep") return sleep(task, std::move(answer));
        if (type == "fail-sometimes") return fail_sometimes(task, std::move(answer));
        answer.fail("unknown activity type '" + type + "'", false);
    }

private:
    // Sleeps input.ms in slices, stopping early when the node cancels the task. A task with
    // a heartbeat_timeout_ms heartbeats a few times per timeout, with its progress, until
    // input.heartbeat_until_ms (default: throughout).
    void sleep(const protocol::Task& task, Answer answer) {
        const auto ms = input_number(task, "ms", kDefaultSleepMs, 0, 24.0 * 3600 * 1000);
        if (!ms) return answer.fail("sleep: input.ms must be a number of milliseconds", false);
        const auto beat_until =
            input_number(task, "heartbeat_until_ms", 24.0 * 3600 * 1000, 0, 24.0 * 3600 * 1000);
        if (!beat_until) {
            return answer.fail("sleep: input.heartbeat_until_ms must be a number of milliseconds",
                               false);
        }
        Sleep sleep{std::chrono::milliseconds{static_cast<std::int64_t>(*ms)},
                    std::chrono::milliseconds{static_cast<std::int64_t>(*beat_until)},
                    task.heartbeat_timeout_ms
                        ? std::clamp(std::chrono::milliseconds{*task.heartbeat_timeout_ms / 4},
                                     std::chrono::milliseconds{10}, std::chrono::milliseconds{1000})
                        : kSleepSlice,
                    task.heartbeat_timeout_ms.has_value(),
                    std::chrono::steady_clock::now(),
                    std::make_shared<net::steady_timer>(timers_),
                    std::move(answer)};
        sleep_on(std::make_shared<Sleep>(std::move(sleep)));
    }

    struct Sleep {
        std::chrono::milliseconds total;
        std::chrono::milliseconds beat_until;
        std::chrono::milliseconds slice;
        bool beats;
        std::chrono::steady_clock::time_point started;
        std::shared_ptr<net::steady_timer> timer;
        Answer answer;
    };

    static void sleep_on(std::shared_ptr<Sleep> sleep) {
        const auto slept = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - sleep->started);
        if (sleep->answer.cancelled()) {
            return sleep->answer.fail(
                "sleep: cancelled after " + std::to_string(slept.count()) + " ms", false);
        }
        if (slept >= sleep->total) return sleep->answer.complete();
        if (sleep->beats && slept < sleep->beat_until) {
            sleep->answer.heartbeat(R"({"slept_ms":)" + std::to_string(slept.count()) + "}");
        }
        sleep->timer->expires_after(std::min(sleep->slice, sleep->total - slept));
        sleep->timer->async_wait(
            [sleep](const boost::system::error_code&) mutable { sleep_on(std::move(sleep)); });
    }

    // Fails with probability input.p, after a wait drawn from 0..input.max_ms.
    void fail_sometimes(const protocol::Task& task, Answer answer) {
        const auto p = input_number(task, "p", kDefaultFailProbability, 0.0, 1.0);
        if (!p) return answer.fail("fail-sometimes: input.p must be within 0..1", false);
        const auto max_ms = input_number(task, "max_ms", 0, 0, 60.0 * 1000);
        if (!max_ms) {
            return answer.fail("fail-sometimes: input.max_ms must be within 0..60000", false);
        }
        const bool fails = uniform_draw(seed_, task.dispatch_key, task.attempt) < *p;
        const auto finish = [fails](Answer& to) {
            if (fails) return to.fail("fail-sometimes: simulated failure", true);
            to.complete();
        };
        if (*max_ms <= 0) return finish(answer);
        // Another draw of the same key (the seed turned), so the wait is not the failure's.
        const auto wait_ms = uniform_draw(~seed_, task.dispatch_key, task.attempt) * *max_ms;
        auto timer = std::make_shared<net::steady_timer>(
            timers_, std::chrono::milliseconds{static_cast<std::int64_t>(wait_ms)});
        timer->async_wait([timer, finish, answer = std::move(answer)](
                              const boost::system::error_code&) mutable { finish(answer); });
    }

    std::uint64_t seed_;
    std::string noop_result_;
    net::io_context timers_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::thread thread_;
};

// Written to a temporary file and renamed, so a reader never sees half of it.
void write_stats(const std::string& path, const WorkerStats& stats) {
    if (path.empty()) return;
    const nlohmann::json out{{"received", stats.tasks_received},
                             {"completed", stats.tasks_completed},
                             {"failed", stats.tasks_failed},
                             {"in_flight", stats.tasks_in_flight},
                             {"connected_nodes", stats.connected_nodes},
                             {"errors_received", stats.errors_received},
                             {"answers_dropped", stats.answers_dropped},
                             {"reconnects", stats.reconnects},
                             {"cancelled", stats.tasks_cancelled}};
    const auto temporary = path + ".tmp";
    {
        std::ofstream file{temporary, std::ios::trunc};
        file << out.dump() << "\n";
        if (!file) {
            spdlog::warn("cannot write stats file {}", temporary);
            return;
        }
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        spdlog::warn("cannot rename {} to {}", temporary, path);
    }
}

// Waits for SIGTERM or SIGINT (blocked in every thread, see main), writing the statistics
// every kStatsInterval meanwhile.
int wait_for_stop_signal(const WorkerClient& client, const std::string& stats_file) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    const auto interval = timespec{kStatsInterval.count(), 0};
    for (;;) {
        const int signal = ::sigtimedwait(&signals, nullptr, &interval);
        if (signal > 0) return signal;
        write_stats(stats_file, client.stats());
    }
}

int run(int argc, char** argv) {
    // Blocked before any thread starts so that every thread inherits the mask and the
    // signals wait for sigtimedwait on the main thread.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    WorkerSettings settings;
    try {
        if (const auto exit_code = parse_command_line(argc, argv, settings)) return *exit_code;
        spdlog::set_level(spdlog::level::from_str(settings.log_level));

        const ReceivedLog received_log{settings.received_log};
        const DeliveryLog delivery_log{settings.delivery_log};
        Activities activities{settings.seed, settings.result_bytes};
        WorkerClient client{
            settings.client, [&](const protocol::Task& task, Responder responder) {
                received_log.record(task);
                delivery_log.delivered(task);
                activities.run(task, Answer{std::move(responder), delivery_log, task});
            }};
        spdlog::info("outboxd-worker {} starting: {} node URL(s), max in flight {}, seed {}",
                     settings.client.worker_id, settings.client.seed_urls.size(),
                     settings.client.max_in_flight, settings.seed);
        client.start();

        const int signal = wait_for_stop_signal(client, settings.stats_file);
        spdlog::info("outboxd-worker: signal {}; stopping (grace {} ms)", signal,
                     settings.stop_grace.count());
        client.stop(settings.stop_grace);
        activities.stop();
        const auto stats = client.stats();
        write_stats(settings.stats_file, stats);
        spdlog::info(
            "outboxd-worker {} stopped: received {}, completed {}, failed {}, "
            "answers dropped {}, node errors {}",
            settings.client.worker_id, stats.tasks_received, stats.tasks_completed,
            stats.tasks_failed, stats.answers_dropped, stats.errors_received);
        return 0;
    } catch (const InvalidSetting& error) {
        std::cerr << "outboxd-worker: " << error.what() << "\n";
        return kExitInvalidSettings;
    } catch (const std::invalid_argument& error) {
        // WorkerClient refusing the options; its message names the option.
        std::cerr << "outboxd-worker: " << error.what() << "\n";
        return kExitInvalidSettings;
    }
}

}  // namespace

// Whatever a run throws ends the process with status 1, logged, instead of std::terminate.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& error) {
        spdlog::error("outboxd-worker: fatal: {}", error.what());
    } catch (...) {
        spdlog::error("outboxd-worker: fatal: unknown exception");
    }
    return 1;
}
