#include "e2e_cluster.hpp"

#include <stdexcept>
#include <thread>

namespace outboxd::test {

NodeHandle& E2eCluster::start_node(const std::string& name, std::map<std::string, std::string> env) {
    env.emplace("OUTBOXD_DATABASE_URL", db.url());
    env.emplace("OUTBOXD_LISTEN", "127.0.0.1:0");
    env.emplace("OUTBOXD_NODE_ID", name);
    env.emplace("OUTBOXD_LOG_LEVEL", "info");
    env.emplace("OUTBOXD_POLL_INTERVAL_MS", "200");
    auto process = std::make_unique<Process>(std::vector<std::string>{bin_dir() + "/outboxd"}, env,
                                             dir_ + "/" + name + ".log");
    if (!process->await_log("event=listening", std::chrono::seconds{30})) {
        throw std::runtime_error("node " + name + " did not start:\n" + process->log());
    }
    const auto port = listening_port(process->log());
    if (!port) throw std::runtime_error("no port in the log of " + name);
    nodes.push_back({name, *port, std::move(process)});
    auto& node = nodes.back();
    if (!await([&] {
            try {
                return http_call(node.port, "GET", "/readyz").status == 200;
            } catch (const std::exception&) {
                return false;
            }
        }, std::chrono::seconds{30})) {
        throw std::runtime_error("node " + name + " never became ready:\n" + node.process->log());
    }
    return node;
}

Process& E2eCluster::start_worker(const std::string& name, const std::vector<std::string>& urls,
                                  std::vector<std::string> flags) {
    std::vector<std::string> argv{bin_dir() + "/outboxd-worker", "--worker-id", name};
    for (const auto& url : urls) {
        argv.push_back("--url");
        argv.push_back(url);
    }
    argv.insert(argv.end(), flags.begin(), flags.end());
    workers.push_back(std::make_unique<Process>(argv, std::map<std::string, std::string>{},
                                                dir_ + "/" + name + ".log"));
    return *workers.back();
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

}  // namespace outboxd::test
