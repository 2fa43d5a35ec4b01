#include "multi_database.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "net_client.hpp"

namespace outboxd::test {
namespace {

constexpr int kShards = 1024;

// `admin_url` (a URI ending in /<database>, perhaps with ?params) naming `database` instead.
std::string with_database(const std::string& admin_url, const std::string& database) {
    const auto query = admin_url.find('?');
    const auto base = admin_url.substr(0, query);
    const auto params = query == std::string::npos ? std::string{} : admin_url.substr(query);
    const auto slash = base.rfind('/');
    if (slash == std::string::npos || slash < base.find("://") + 3) {
        return base + "/" + database + params;
    }
    return base.substr(0, slash + 1) + database + params;
}

}  // namespace

ServerDatabase::ServerDatabase(std::string admin_url, std::string name)
    : admin_url_(std::move(admin_url)),
      name_(std::move(name)),
      url_(with_database(admin_url_, name_)) {
    pqxx::connection admin{admin_url_};
    pqxx::nontransaction{admin}.exec("CREATE DATABASE " + admin.quote_name(name_));
}

ServerDatabase::~ServerDatabase() {
    try {
        pqxx::connection admin{admin_url_};
        pqxx::nontransaction{admin}.exec("DROP DATABASE IF EXISTS " + admin.quote_name(name_) +
                                         " WITH (FORCE)");
    } catch (...) {
        // A server that is gone took the database with it.
    }
}

std::string databases_setting(const std::vector<ServedDatabase>& databases) {
    // Ordered: the first named is the control database.
    nlohmann::ordered_json setting = nlohmann::ordered_json::object();
    for (const auto& database : databases) setting[database.name] = database.url;
    return setting.dump();
}

pqxx::result exec_on(const std::string& url, const std::string& sql) {
    pqxx::connection conn{url};
    pqxx::work tx{conn};
    auto result = tx.exec(sql);
    tx.commit();
    return result;
}

std::int64_t count_rows(const std::string& url, const std::string& where) {
    return exec_on(url, "SELECT count(*) FROM outbox WHERE " + where)[0][0].as<std::int64_t>();
}

bool LeaseCover::covered_by(const std::set<std::string>& nodes) const {
    if (uncovered != 0) return false;
    for (const auto& [node, held] : shards) {
        if (!nodes.contains(node)) return false;
    }
    return true;
}

bool LeaseCover::balanced(std::size_t members) const {
    if (uncovered != 0 || shards.size() != members) return false;
    const int share = kShards / static_cast<int>(members);
    for (const auto& [node, held] : shards) {
        const auto size = static_cast<int>(held.size());
        if (size < share - 1 || size > share + 1) return false;
    }
    return true;
}

LeaseCover lease_cover(const std::string& url) {
    // The owner is an incarnation, node id / boot id.
    const auto rows = exec_on(url,
                              "SELECT shard, split_part(owner, '/', 1) FROM live_shard_leases "
                              "ORDER BY shard");
    LeaseCover cover;
    cover.uncovered = kShards - static_cast<int>(rows.size());
    for (const auto& row : rows) {
        cover.shards[row[1].as<std::string>()].push_back(row[0].as<int>());
    }
    return cover;
}

std::map<std::string, int> view_partition(const nlohmann::json& view, const std::string& database) {
    std::vector<int> owners(kShards, 0);
    std::map<std::string, int> sizes;
    for (const auto& node : view["nodes"]) {
        for (const auto& served : node["databases"]) {
            if (served["database"] != database) continue;
            for (const auto& range : served["shards"]) {
                for (int s = range[0].get<int>(); s <= range[1].get<int>(); ++s) {
                    ++owners.at(static_cast<std::size_t>(s));
                    ++sizes[node["node_id"].get<std::string>()];
                }
            }
        }
    }
    for (const int count : owners) {
        if (count != 1) return {};
    }
    return sizes;
}

Readiness readiness(const NodeHandle& node) {
    Readiness ready;
    try {
        const auto answer = http_call(node.port, "GET", "/readyz");
        ready.status = answer.status;
        const auto body = nlohmann::json::parse(answer.body);
        for (const auto& [name, state] : body["databases"].items()) {
            ready.databases[name] = state["ready"].get<bool>();
        }
    } catch (const std::exception&) {
        ready.status = 0;
    }
    return ready;
}

MultiDatabaseCluster::MultiDatabaseCluster(const std::string& name,
                                           std::vector<ServedDatabase> databases)
    : databases_(std::move(databases)), dir_(scratch_dir(name)) {}

NodeHandle& MultiDatabaseCluster::launch_node(const std::string& name,
                                              std::map<std::string, std::string> env) {
    // One database named "default" is the single-database configuration, as before there
    // were several.
    if (databases_.size() == 1 && databases_.front().name == "default") {
        env.emplace("OUTBOXD_DATABASE_URL", databases_.front().url);
    } else {
        env.emplace("OUTBOXD_DATABASES", databases_setting(databases_));
    }
    env.emplace("OUTBOXD_LISTEN", "127.0.0.1:0");
    env.emplace("OUTBOXD_NODE_ID", name);
    env.emplace("OUTBOXD_LOG_LEVEL", "info");
    env.emplace("OUTBOXD_POLL_INTERVAL_MS", "200");
    auto process = std::make_unique<Process>(std::vector<std::string>{bin_dir() + "/outboxd"}, env,
                                             dir_ + "/" + name + ".log");
    nodes.push_back({name, 0, std::move(process)});
    return nodes.back();
}

void MultiDatabaseCluster::await_ready(NodeHandle& node, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (!node.process->await_log("event=listening", timeout)) {
        throw std::runtime_error("node " + node.name + " did not start:\n" + node.process->log());
    }
    const auto port = listening_port(node.process->log());
    if (!port) throw std::runtime_error("no port in the log of " + node.name);
    node.port = *port;
    const auto all_ready = [&] {
        const auto ready = readiness(node);
        if (ready.status != 200 || ready.databases.size() != databases_.size()) return false;
        for (const auto& [name, is_ready] : ready.databases) {
            if (!is_ready) return false;
        }
        return true;
    };
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!E2eCluster::await(all_ready, std::max(left, std::chrono::milliseconds{1000}))) {
        throw std::runtime_error("node " + node.name + " never had every database ready:\n" +
                                 node.process->log());
    }
}

Process& MultiDatabaseCluster::start_worker(const std::string& name,
                                            const std::vector<std::string>& urls,
                                            const std::vector<std::string>& flags) {
    workers.push_back(std::make_unique<Process>(worker_command(name, urls, flags),
                                                std::map<std::string, std::string>{},
                                                dir_ + "/" + name + ".log"));
    return *workers.back();
}

void stage_sleep_rows(const std::string& url, const std::string& prefix, int count, int sleep_ms) {
    exec_on(url, "INSERT INTO outbox (workflow_id, ordinal, activity_type, input) SELECT '" +
                     prefix + "-' || g, 0, 'sleep', '{\"ms\": " + std::to_string(sleep_ms) +
                     "}' FROM generate_series(1, " + std::to_string(count) + ") g");
}

std::vector<std::string> start_sleep_workers(MultiDatabaseCluster& cluster, const NodeHandle& seed,
                                             int count, int credit) {
    std::vector<std::string> logs;
    for (int i = 1; i <= count; ++i) {
        const auto name = "w" + std::to_string(i);
        logs.push_back(cluster.dir() + "/" + name + ".received");
        cluster.start_worker(
            name, {seed.worker_url()},
            {"--activity-types", "sleep", "--max-in-flight", std::to_string(credit),
             "--received-log", logs.back(), "--delivery-log", logs.back() + ".timed"});
    }
    return logs;
}

std::map<std::string, int> deliveries(const std::vector<std::string>& logs) {
    std::map<std::string, int> count;
    for (const auto& path : logs) {
        for (const auto& line : received(path)) ++count[line.substr(0, line.rfind(':'))];
    }
    return count;
}

std::map<std::string, std::int64_t> first_received_ms(const std::vector<std::string>& logs) {
    std::map<std::string, std::int64_t> first;
    for (const auto& path : logs) {
        // `deliver <unix_ms> <task_id> <dispatch_key> [attempt]`, one line a task received.
        for (const auto& line : received(path + ".timed")) {
            std::istringstream words{line};
            std::string kind, task_id, key;
            std::int64_t at = 0;
            if (!(words >> kind >> at >> task_id >> key) || kind != "deliver") continue;
            const auto [it, fresh] = first.emplace(key, at);
            if (!fresh) it->second = std::min(it->second, at);
        }
    }
    return first;
}

bool workers_everywhere(const MultiDatabaseCluster& cluster, int workers) {
    return std::all_of(cluster.nodes.begin(), cluster.nodes.end(), [&](const NodeHandle& node) {
        try {
            return !node.process->running() ||
                   E2eCluster::metric(node, "outboxd_workers_connected") == workers;
        } catch (const std::exception&) {
            return false;
        }
    });
}

bool leases_balanced(const MultiDatabaseCluster& cluster, std::size_t members) {
    return std::all_of(
        cluster.databases().begin(), cluster.databases().end(),
        [&](const auto& database) { return lease_cover(database.url).balanced(members); });
}

std::int64_t done_in(const std::string& url) { return count_rows(url, "status = 'done'"); }

}  // namespace outboxd::test
