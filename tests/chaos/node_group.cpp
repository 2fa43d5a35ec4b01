#include "node_group.hpp"

#include <csignal>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chaos_clock.hpp"
#include "database_url.hpp"
#include "net_client.hpp"

namespace outboxd::chaos {

namespace {

constexpr std::chrono::seconds kListenTimeout{60};
constexpr std::chrono::seconds kReadyTimeout{30};
constexpr std::size_t kLogTailLines = 10;

bool can_listen_on(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
                    ::listen(fd, 1) == 0;
    ::close(fd);
    return ok;
}

// A node keeps its port across restarts (the SDK recognises a node by URL and id, so a node
// that came back elsewhere would not be reached), so the port is picked here rather than by
// the kernel: below 32768, where no client socket takes it while the node is down.
std::uint16_t pick_listen_port() {
    static std::set<std::uint16_t> taken;
    const int span = 6000;
    const int first = 24000 + static_cast<int>(::getpid() % span);
    for (int offset = 0; offset < span; ++offset) {
        const auto port = static_cast<std::uint16_t>(24000 + (first - 24000 + offset) % span);
        if (!taken.contains(port) && can_listen_on(port)) {
            taken.insert(port);
            return port;
        }
    }
    throw std::runtime_error("no free port for a node between 24000 and 30000");
}

std::string tail_of(const std::string& path) {
    std::ifstream in{path};
    std::deque<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
        if (lines.size() > kLogTailLines) lines.pop_front();
    }
    std::string out;
    for (const auto& line : lines) out += line + "\n";
    return out;
}

}  // namespace

NodeGroup::NodeGroup(const std::vector<std::uint16_t>& upstream_ports, std::string bin_dir,
                     std::string log_dir, std::map<std::string, std::string> env, int count)
    : upstream_up_(upstream_ports.size(), true),
      bin_dir_(std::move(bin_dir)),
      log_dir_(std::move(log_dir)),
      env_(std::move(env)) {
    nodes_.resize(static_cast<std::size_t>(count));
    // Proxies first: they hold their ports while node ports are probed, so none is picked twice.
    for (auto& node : nodes_) {
        for (const auto port : upstream_ports) {
            node.proxies.push_back(std::make_unique<test::TcpProxy>(port));
        }
        node.proxy_open.assign(upstream_ports.size(), true);
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        nodes_[i].id = "node-" + std::to_string(i + 1);
        nodes_[i].port = pick_listen_port();
    }
}

NodeGroup::~NodeGroup() {
    // A stopped process ignores SIGTERM until continued; SIGKILL (the Process destructor)
    // works regardless, but continue it so nothing is left stopped if that ever changes.
    for (auto& node : nodes_) {
        if (node.process && node.paused) node.process->signal(SIGCONT);
    }
}

void NodeGroup::start_all() {
    for (auto& node : nodes_) launch(node);
    for (auto& node : nodes_) {
        await_listening(node);
        const bool ready = await_condition(
            [&] {
                try {
                    return test::http_call(node.port, "GET", "/readyz").status == 200;
                } catch (const std::exception&) {
                    return false;
                }
            },
            kReadyTimeout);
        if (!ready) throw std::runtime_error(node.id + " never became ready; see " + node.log_path);
    }
}

std::vector<std::string> NodeGroup::worker_urls() const {
    std::vector<std::string> urls;
    for (const auto& node : nodes_) {
        urls.push_back("ws://127.0.0.1:" + std::to_string(node.port) + "/v1/workers");
    }
    return urls;
}

void NodeGroup::kill(std::size_t i) {
    auto& node = nodes_[i];
    if (!node.process) return;
    node.process->signal(SIGKILL);
    (void)node.process->wait(std::chrono::seconds{10});
    node.process.reset();
    node.paused = false;
    ++expected_;
}

void NodeGroup::restart(std::size_t i) {
    auto& node = nodes_[i];
    if (node.process) kill(i);
    launch(node);
    await_listening(node);
}

void NodeGroup::pause(std::size_t i) {
    auto& node = nodes_[i];
    if (!node.process) return;
    node.process->signal(SIGSTOP);
    node.paused = true;
}

void NodeGroup::resume(std::size_t i) {
    auto& node = nodes_[i];
    if (!node.process) return;
    node.process->signal(SIGCONT);
    node.paused = false;
}

void NodeGroup::cut(std::size_t i) {
    nodes_[i].partitioned = true;
    apply_routes(nodes_[i]);
}

void NodeGroup::restore(std::size_t i) {
    nodes_[i].partitioned = false;
    apply_routes(nodes_[i]);
}

void NodeGroup::set_upstream_up(std::size_t u, bool up) {
    upstream_up_[u] = up;
    for (auto& node : nodes_) apply_routes(node);
}

void NodeGroup::apply_routes(Node& node) {
    for (std::size_t u = 0; u < node.proxies.size(); ++u) {
        const bool open = upstream_up_[u] && !node.partitioned;
        if (open == node.proxy_open[u]) continue;
        if (open) {
            node.proxies[u]->restore();
        } else {
            node.proxies[u]->cut();
        }
        node.proxy_open[u] = open;
    }
}

void NodeGroup::poll() {
    for (auto& node : nodes_) {
        if (!node.process || node.process->running()) continue;
        const auto code = node.process->wait(std::chrono::milliseconds{0});
        record_unexpected(node, code.value_or(-1));
        node.process.reset();
        node.paused = false;
        // The run goes on with the node back, so that later faults still meet three nodes.
        launch(node);
        await_listening(node);
    }
}

void NodeGroup::stop_all(std::chrono::milliseconds timeout) {
    for (auto& node : nodes_) {
        if (!node.process) continue;
        // A stopped process acts on SIGTERM only once continued.
        if (node.paused) node.process->signal(SIGCONT);
        node.paused = false;
        node.process->signal(SIGTERM);
    }
    for (auto& node : nodes_) {
        if (!node.process) continue;
        const auto code = node.process->wait(timeout);
        if (!code) {
            node.process->signal(SIGKILL);
            (void)node.process->wait(std::chrono::seconds{10});
            record_unexpected(node, -1);
        } else if (*code != 0) {
            record_unexpected(node, *code);
        } else {
            ++expected_;
        }
        node.process.reset();
    }
}

void NodeGroup::launch(Node& node) {
    auto env = env_;
    std::vector<std::uint16_t> proxy_ports;
    for (const auto& proxy : node.proxies) proxy_ports.push_back(proxy->port());
    env["OUTBOXD_DATABASE_URL"] = database_url(proxy_ports);
    env["OUTBOXD_LISTEN"] = "127.0.0.1:" + std::to_string(node.port);
    env["OUTBOXD_NODE_ID"] = node.id;
    node.log_path = log_dir_ + "/" + node.id + "." + std::to_string(node.generation++) + ".log";
    node.process = std::make_unique<test::Process>(std::vector<std::string>{bin_dir_ + "/outboxd"},
                                                   env, node.log_path);
}

void NodeGroup::await_listening(Node& node) {
    if (!node.process->await_log("event=listening", kListenTimeout)) {
        std::cerr << "chaos: " << node.id << " is not listening after " << kListenTimeout.count()
                  << " s; see " << node.log_path << "\n";
    }
}

void NodeGroup::record_unexpected(const Node& node, int code) {
    unexpected_.push_back({node.id, unix_ms(), code, tail_of(node.log_path)});
    std::cerr << "chaos: UNEXPECTED EXIT of " << node.id << " (code " << code << "); log "
              << node.log_path << ":\n"
              << unexpected_.back().log_tail;
}

}  // namespace outboxd::chaos
