#include "node_fleet.hpp"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <pqxx/pqxx>

#include "http_client.hpp"
#include "proc_stat.hpp"

namespace outboxd::bench {
namespace {

using Children = std::vector<std::unique_ptr<ChildProcess>>;

double total_cpu_seconds(const Children& children) {
    double total = 0;
    for (const auto& child : children) total += process_cpu_seconds(child->pid());
    return total;
}

void throw_if_any_exited(Children& children, const std::string& what) {
    for (auto& child : children) {
        if (!child->alive()) {
            throw std::runtime_error{what + " exited; log " + child->log_path() + ":\n" +
                                     child->log_tail(20)};
        }
    }
}

}  // namespace
namespace {

constexpr int kShards = 1024;
constexpr std::chrono::milliseconds kPollInterval{50};
constexpr std::chrono::milliseconds kWorkerStopGrace{5000};

// The port of a node from its log, once it has logged `event=listening`.
std::optional<std::string> listening_address(const std::string& log_path) {
    static const std::regex pattern{R"(event=listening .*address=([^ ]+:[0-9]+))"};
    std::ifstream file{log_path};
    for (std::string line; std::getline(file, line);) {
        std::smatch match;
        if (std::regex_search(line, match, pattern)) return match[1].str();
    }
    return std::nullopt;
}

}  // namespace

NodeFleet::NodeFleet(const FleetSettings& settings, int count, const std::string& tag)
    : database_url_(settings.database_url) {
    for (int i = 0; i < count; ++i) {
        const auto node_id = "bench-" + tag + "-node-" + std::to_string(i + 1);
        ChildSpec spec;
        spec.argv = {settings.bin_dir + "/" + std::string{kNodeBinary}, "serve"};
        // info, not warn: the listening line that names the port is an info line. The node
        // logs nothing per row or per batch at info.
        spec.env = {{"OUTBOXD_LISTEN", "127.0.0.1:0"},
                    {"OUTBOXD_NODE_ID", node_id},
                    {"OUTBOXD_BATCH_SIZE", std::to_string(settings.batch_size)},
                    {"OUTBOXD_LOG_LEVEL", "info"}};
        bool databases = false;
        for (const auto& entry : settings.extra_env) {
            spec.env.push_back(entry);
            databases = databases || entry.first == "OUTBOXD_DATABASES";
        }
        // Several databases name the busy one among them; not both.
        if (!databases) spec.env.emplace_back("OUTBOXD_DATABASE_URL", settings.database_url);
        spec.log_path = settings.log_dir + "/" + node_id + ".log";
        std::ofstream{spec.log_path, std::ios::trunc}.close();  // a rerun must not read an old port
        nodes_.push_back(std::make_unique<ChildProcess>(spec));
    }
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    for (auto& node : nodes_) {
        for (;;) {
            if (const auto address = listening_address(node->log_path())) {
                urls_.push_back("ws://" + *address + "/v1/workers");
                http_urls_.push_back("http://" + *address);
                break;
            }
            check_alive();
            if (std::chrono::steady_clock::now() > deadline) {
                throw std::runtime_error{"node did not report its port in time; log " +
                                         node->log_path() + ":\n" + node->log_tail(20)};
            }
            std::this_thread::sleep_for(kPollInterval);
        }
    }
    wait_for_balanced_leases(count);
    wait_for_ready();
}

NodeFleet::~NodeFleet() { stop(); }

void NodeFleet::wait_for_balanced_leases(int count) {
    pqxx::connection conn{database_url_};
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    for (;;) {
        pqxx::nontransaction tx{conn};
        // Owners are node incarnations; a lease counts while it holds. Schemas before
        // live_shard_leases (an older node, in a same-run A/B) kept a lease per shard.
        const bool node_leases =
            tx.exec1("SELECT to_regclass('live_shard_leases') IS NOT NULL")[0].as<bool>();
        const std::string live = node_leases
                                     ? "SELECT owner FROM live_shard_leases"
                                     : "SELECT owner FROM shard_leases WHERE owner IS NOT NULL"
                                       " AND expires_at > now()";
        const auto row = tx.exec1(
            "SELECT count(*), coalesce(sum(n), 0), coalesce(max(n) - min(n), 0)"
            " FROM (SELECT count(*) AS n FROM (" +
            live + ") live GROUP BY owner) owners");
        tx.commit();
        if (row[0].as<int>() == count && row[1].as<int>() == kShards && row[2].as<int>() <= 1) {
            return;
        }
        check_alive();
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error{"shard leases did not settle over " + std::to_string(count) +
                                     " node(s) in time (owners " + row[0].c_str() + ", leased " +
                                     row[1].c_str() + ")"};
        }
        std::this_thread::sleep_for(kPollInterval);
    }
}

// Leases can settle before a node has read its credentials; until then its API refuses
// what an open node allows (a scenario's PUT /v1/namespaces answered 401).
void NodeFleet::wait_for_ready() {
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    for (const auto& url : http_urls_) {
        for (;;) {
            if (http_request(url, "GET", "/readyz").status == 200) break;
            check_alive();
            if (std::chrono::steady_clock::now() > deadline) {
                throw std::runtime_error{"node " + url + " was not ready in time"};
            }
            std::this_thread::sleep_for(kPollInterval);
        }
    }
}

double NodeFleet::cpu_seconds() const { return total_cpu_seconds(nodes_); }

void NodeFleet::check_alive() { throw_if_any_exited(nodes_, "outboxd node"); }

void NodeFleet::stop() {
    // SIGTERM to all first, so that they drain in parallel.
    for (auto& node : nodes_) {
        if (node->alive()) ::kill(node->pid(), SIGTERM);
    }
    for (auto& node : nodes_) node->stop(ChildProcess::kStopGrace);
}

void NodeFleet::kill(std::size_t index) {
    auto& node = *nodes_.at(index);
    if (node.alive()) ::kill(node.pid(), SIGKILL);
    node.stop(ChildProcess::kStopGrace);
}

WorkerFleet::WorkerFleet(const FleetSettings& settings, const std::vector<WorkerGroup>& groups,
                         const std::string& seed_url, const std::string& tag) {
    for (const auto& group : groups) {
        // One argument however many namespaces: 1,000 names of ~10 bytes are ~10 KiB, far
        // below Linux's 128 KiB limit for one argument.
        std::string namespaces;
        for (const auto& ns : group.namespaces) namespaces += (namespaces.empty() ? "" : ",") + ns;
        for (int i = 0; i < group.count; ++i) {
            const auto worker_id = "bench-" + tag + "-" + group.name + "-" + std::to_string(i + 1);
            ChildSpec spec;
            spec.argv = {settings.bin_dir + "/" + std::string{kWorkerBinary},
                         "--url",
                         seed_url,
                         "--activity-types",
                         group.activity,
                         "--namespaces",
                         namespaces,
                         "--task-queue",
                         group.task_queue,
                         "--max-in-flight",
                         std::to_string(group.max_in_flight),
                         "--worker-id",
                         worker_id,
                         "--log-level",
                         "warn"};
            if (group.result_bytes > 0) {
                spec.argv.insert(spec.argv.end(),
                                 {"--result-bytes", std::to_string(group.result_bytes)});
            }
            if (!group.token.empty()) spec.argv.insert(spec.argv.end(), {"--token", group.token});
            if (group.received_log) {
                received_logs_.push_back(settings.log_dir + "/" + worker_id + ".received");
                std::ofstream{received_logs_.back(), std::ios::trunc}.close();
                spec.argv.insert(spec.argv.end(), {"--received-log", received_logs_.back()});
            }
            spec.log_path = settings.log_dir + "/" + worker_id + ".log";
            workers_.push_back(std::make_unique<ChildProcess>(spec));
        }
    }
}

WorkerFleet::~WorkerFleet() { stop(); }

double WorkerFleet::cpu_seconds() const { return total_cpu_seconds(workers_); }

std::int64_t WorkerFleet::keys_received_twice() const {
    // Each line is `dispatch_key:attempt`.
    std::unordered_map<std::string, int> received;
    for (const auto& path : received_logs_) {
        std::ifstream in{path};
        for (std::string line; std::getline(in, line);) {
            if (!line.empty()) ++received[line.substr(0, line.rfind(':'))];
        }
    }
    return std::count_if(received.begin(), received.end(),
                         [](const auto& entry) { return entry.second > 1; });
}

void WorkerFleet::check_alive() { throw_if_any_exited(workers_, "outboxd-worker"); }

void WorkerFleet::stop() {
    for (auto& worker : workers_) {
        if (worker->alive()) ::kill(worker->pid(), SIGTERM);
    }
    for (auto& worker : workers_) worker->stop(kWorkerStopGrace);
}

double NodeFleet::metric_sum(std::string_view name, const std::vector<std::string>& labels) const {
    double sum = 0;
    for (const auto& url : http_urls_) {
        std::istringstream metrics{http_request(url, "GET", "/metrics").body};
        for (std::string line; std::getline(metrics, line);) {
            // `name{labels} value` or `name value`; never a longer name that starts alike.
            if (!line.starts_with(name) || line.size() <= name.size() ||
                (line[name.size()] != '{' && line[name.size()] != ' ')) {
                continue;
            }
            bool matches = true;
            for (const auto& label : labels)
                matches = matches && line.find(label) != std::string::npos;
            if (matches) sum += std::stod(line.substr(line.rfind(' ') + 1));
        }
    }
    return sum;
}

std::int64_t NodeFleet::rows_done() const {
    return static_cast<std::int64_t>(metric_sum("outboxd_outcomes_total", {"outcome=\"done\""}));
}

std::int64_t NodeFleet::rows_done(const std::string& ns) const {
    return static_cast<std::int64_t>(
        metric_sum("outboxd_outcomes_total", {"namespace=\"" + ns + "\"", "outcome=\"done\""}));
}

std::int64_t NodeFleet::workers_connected() const {
    return static_cast<std::int64_t>(metric_sum("outboxd_workers_connected"));
}

NodeFleet::ClaimRounds NodeFleet::claim_rounds() const {
    return {static_cast<std::int64_t>(metric_sum("outboxd_claim_seconds_count")),
            metric_sum("outboxd_claim_seconds_sum")};
}

}  // namespace outboxd::bench
