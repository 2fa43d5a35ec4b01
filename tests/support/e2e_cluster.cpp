#include "e2e_cluster.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace outboxd::test {
namespace {

// Shard ranges per node id, when the view covers every shard exactly once; empty otherwise.
std::map<std::string, int> partition_of(const nlohmann::json& view) {
    std::vector<int> owners(1024, 0);
    std::map<std::string, int> sizes;
    for (const auto& node : view["nodes"]) {
        for (const auto& range : node["shards"]) {
            for (int s = range[0].get<int>(); s <= range[1].get<int>(); ++s) {
                ++owners[s];
                ++sizes[node["node_id"].get<std::string>()];
            }
        }
    }
    for (const int count : owners) {
        if (count != 1) return {};
    }
    return sizes;
}

}  // namespace

bool balanced_over(const NodeHandle& node, std::size_t members) {
    try {
        const auto sizes =
            partition_of(nlohmann::json::parse(http_call(node.port, "GET", "/v1/cluster").body));
        if (sizes.size() != members) return false;
        for (const auto& [id, size] : sizes) {
            if (size < 1024 / static_cast<int>(members) - 1 ||
                size > 1024 / static_cast<int>(members) + 1) {
                return false;
            }
        }
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

std::vector<std::string> received(const std::string& path) {
    std::ifstream in{path};
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) lines.push_back(line);
    }
    return lines;
}

NodeHandle& E2eCluster::start_node(const std::string& name,
                                   std::map<std::string, std::string> env) {
    auto& node = launch_node(name, std::move(env));
    await_ready(node);
    return node;
}

NodeHandle& E2eCluster::launch_node(const std::string& name,
                                    std::map<std::string, std::string> env) {
    // A node of several databases names them all (databases_env); both are refused.
    if (!env.contains("OUTBOXD_DATABASES") && !env.contains("OUTBOXD_DATABASES_FILE")) {
        env.emplace("OUTBOXD_DATABASE_URL", db.url());
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

TestDatabase& E2eCluster::add_database(const std::string& name, bool migrated) {
    more_databases.emplace_back(name, std::make_unique<TestDatabase>(migrated));
    return *more_databases.back().second;
}

const TestDatabase& E2eCluster::database(const std::string& name) const {
    for (const auto& [added, database] : more_databases) {
        if (added == name) return *database;
    }
    throw std::runtime_error("no database added as '" + name + "'");
}

std::map<std::string, std::string> E2eCluster::databases_env(const std::string& first,
                                                             const std::string& control) const {
    // nlohmann::ordered_json: the node's order of databases is the order written.
    nlohmann::ordered_json databases = {{first, db.url()}};
    for (const auto& [name, database] : more_databases) databases[name] = database->url();
    std::map<std::string, std::string> env{{"OUTBOXD_DATABASES", databases.dump()}};
    if (!control.empty()) env.emplace("OUTBOXD_CONTROL_DATABASE", control);
    return env;
}

void E2eCluster::await_ready(NodeHandle& node) {
    await_ready(node, [](std::uint16_t port) {
        try {
            return http_call(port, "GET", "/readyz").status == 200;
        } catch (const std::exception&) {
            return false;
        }
    });
}

void E2eCluster::await_ready(NodeHandle& node, const std::function<bool(std::uint16_t)>& ready) {
    const auto& name = node.name;
    auto& process = node.process;
    if (!process->await_log("event=listening", std::chrono::seconds{60})) {
        throw std::runtime_error("node " + name + " did not start:\n" + process->log());
    }
    const auto port = listening_port(process->log());
    if (!port) throw std::runtime_error("no port in the log of " + name);
    node.port = *port;
    if (!await([&] { return ready(node.port); }, std::chrono::seconds{30})) {
        throw std::runtime_error("node " + name + " never became ready:\n" + node.process->log());
    }
}

NodeHandle& E2eCluster::start_node_with(const std::string& name,
                                        std::map<std::string, std::string> env,
                                        const std::function<bool(std::uint16_t)>& ready) {
    auto& node = launch_node(name, std::move(env));
    await_ready(node, ready);
    return node;
}

const std::string& claim_audit_sql() {
    // One event per claim and one per end of a claim (outcome, re-arm, release, cancel), at
    // the start of the statement that made it: every row of one claim at the same instant, as
    // the claim's limits (a rate limit's tokens) were decided for them together, not spread
    // over the time the statement takes to update them one by one (hundreds of milliseconds on
    // a loaded machine, which made windows look fuller than the limit let them be).
    static const std::string sql = R"SQL(
        CREATE TABLE claim_audit (
            seq bigserial PRIMARY KEY, kind text, row_id bigint, dispatch_key text, shard int,
            claimed_by text, token bigint, at timestamptz DEFAULT statement_timestamp());
        CREATE FUNCTION audit_claim() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.status = 'claimed' THEN
                INSERT INTO claim_audit (kind, row_id, dispatch_key, shard, claimed_by, token)
                VALUES ('claim', NEW.id, NEW.dispatch_key, NEW.shard, NEW.claimed_by, NEW.claim_token);
            ELSE
                INSERT INTO claim_audit (kind, row_id, dispatch_key, shard, claimed_by, token)
                VALUES ('end', OLD.id, OLD.dispatch_key, OLD.shard, OLD.claimed_by, OLD.claim_token);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER audit_claim AFTER UPDATE ON outbox FOR EACH ROW
            WHEN ((NEW.status = 'claimed') <> (OLD.status = 'claimed'))
            EXECUTE FUNCTION audit_claim();)SQL";
    return sql;
}

void E2eCluster::audit_claims() { db.exec(claim_audit_sql()); }

std::int64_t E2eCluster::overlapping_claims() const {
    // A claim that follows another claim of the same row with no end in between.
    return db
        .exec(R"SQL(
        SELECT count(*) FROM (
            SELECT kind, lag(kind) OVER (PARTITION BY row_id ORDER BY seq) AS previous
            FROM claim_audit) x
        WHERE kind = 'claim' AND previous = 'claim')SQL")[0][0]
        .as<std::int64_t>();
}

std::string E2eCluster::db_now() const {
    return db.exec("SELECT clock_timestamp()::text")[0][0].as<std::string>();
}

Process& E2eCluster::start_worker(const std::string& name, const std::vector<std::string>& urls,
                                  const std::vector<std::string>& flags) {
    workers.push_back(std::make_unique<Process>(worker_command(name, urls, flags),
                                                std::map<std::string, std::string>{},
                                                dir_ + "/" + name + ".log"));
    return *workers.back();
}

std::vector<std::string> worker_command(const std::string& name,
                                        const std::vector<std::string>& urls,
                                        const std::vector<std::string>& flags) {
    std::vector<std::string> argv{bin_dir() + "/outboxd-worker", "--worker-id", name};
    for (const auto& url : urls) {
        argv.push_back("--url");
        argv.push_back(url);
    }
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
}

bool E2eCluster::await(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    return true;
}

std::int64_t E2eCluster::count(const std::string& where) const {
    return db.exec("SELECT count(*) FROM outbox WHERE " + where)[0][0].as<std::int64_t>();
}

std::optional<double> metric_sample(const std::string& text, const std::string& series) {
    // A series named without its database is the single database's, "default".
    const auto of_default = [](std::string line) {
        for (const std::string label : {"{database=\"default\"}", "database=\"default\","}) {
            if (const auto at = line.find(label); at != std::string::npos)
                line.erase(at, label.size());
        }
        return line;
    };
    std::istringstream in{text};
    for (std::string line; std::getline(in, line);) {
        for (const auto& candidate : {line, of_default(line)}) {
            if (candidate.rfind(series + " ", 0) == 0) {
                return std::stod(candidate.substr(series.size() + 1));
            }
        }
    }
    return std::nullopt;
}

std::optional<double> E2eCluster::metric(const NodeHandle& node, const std::string& series) {
    return metric_sample(http_call(node.port, "GET", "/metrics").body, series);
}

bool E2eCluster::await_growth(const NodeHandle& node, const std::string& series, double by,
                              std::chrono::milliseconds timeout) {
    const auto from = metric(node, series).value_or(0);
    return await([&] { return metric(node, series).value_or(0) >= from + by; }, timeout);
}

bool E2eCluster::await_job_runs(const NodeHandle& node, const std::string& job, int runs,
                                std::chrono::milliseconds timeout) {
    return await_growth(node, "outboxd_maintenance_runs_total{job=\"" + job + "\",result=\"ok\"}",
                        runs, timeout);
}

std::uint16_t E2eCluster::pg_port() {
    const auto admin = TestDatabase::admin_url();
    const auto colon = admin.rfind(':');
    return static_cast<std::uint16_t>(
        std::stoi(admin.substr(colon + 1, admin.rfind('/') - colon - 1)));
}

std::string E2eCluster::url_via(std::uint16_t port) const {
    auto url = db.url();
    const std::string from = ":" + std::to_string(pg_port()) + "/";
    url.replace(url.find(from), from.size(), ":" + std::to_string(port) + "/");
    return url;
}

}  // namespace outboxd::test
