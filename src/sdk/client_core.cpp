#include "client_core.hpp"

#include <algorithm>
#include <random>

#include <stdexcept>

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <spdlog/spdlog.h>

namespace outboxd::sdk::detail {
namespace {

namespace net = boost::asio;
namespace protocol = worker::protocol;
using boost::system::error_code;

// Frames a node may leave unread before the connection counts as stuck: every answer the
// credit window allows, twice over (credit can shrink while answers are queued), plus room
// for control frames.
constexpr std::size_t kControlFrameSlack = 64;

// A node that stays unreachable is reported on the first failure and then once every this
// many attempts, not on each one.
constexpr std::uint64_t kConnectFailuresPerWarning = 20;

NodeConnection::Settings connection_settings(const WorkerOptions& options) {
    NodeConnection::Settings settings;
    settings.token = options.token;
    settings.max_frame_bytes = options.max_frame_bytes;
    settings.connect_timeout = options.connect_timeout;
    settings.idle_timeout = options.idle_timeout;
    settings.max_write_queue =
        2 * static_cast<std::size_t>(options.max_in_flight) + kControlFrameSlack;
    return settings;
}

}  // namespace

std::unique_ptr<net::ssl::context> make_tls_client_context(
    const std::optional<std::string>& ca_file) {
    auto context = std::make_unique<net::ssl::context>(net::ssl::context::tls_client);
    context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                         net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                         net::ssl::context::no_tlsv1_1);
    error_code ec;
    if (ca_file) {
        context->load_verify_file(*ca_file, ec);
        if (ec) {
            throw std::invalid_argument(
                "worker client: ca_file: cannot load PEM certificates from '" + *ca_file +
                "': " + ec.message());
        }
    } else {
        context->set_default_verify_paths(ec);  // the system's trust store, when it has one
    }
    return context;
}

ClientCore::ClientCore(WorkerOptions options, TaskHandler handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      connection_settings_(connection_settings(options_)),
      tls_(make_tls_client_context(options_.ca_file)),
      tls_seeded_(std::any_of(options_.seed_urls.begin(), options_.seed_urls.end(),
                              [](const std::string& url) { return url.starts_with("wss://"); })),
      grace_timer_(ioc_),
      close_deadline_(ioc_),
      rebalance_timer_(ioc_),
      ledger_({options_.max_in_flight, options_.rebalance_interval, kCreditSettle}),
      settle_timer_(ioc_) {}

ClientCore::~ClientCore() {
    // WorkerClient stops before letting go; this only covers a core that was never started
    // or whose stop began on the network thread.
    if (thread_.joinable()) thread_.join();
}

void ClientCore::start() {
    const std::lock_guard lock{lifecycle_mutex_};
    if (started_) return;
    started_ = true;
    work_.emplace(ioc_.get_executor());
    net::post(ioc_, [this] {
        for (const auto& url : options_.seed_urls) {
            if (NodeLink* link = add_link(url, /*seed=*/true)) connect(*link);
        }
        if (rebalancing()) schedule_rebalance();
    });
    thread_ = std::thread([this] {
        try {
            ioc_.run();
        } catch (const std::exception& error) {
            // Handlers report through error codes; this is a bug, not an operating condition.
            spdlog::critical("worker client network thread failed: {}", error.what());
        }
    });
}

void ClientCore::stop(std::chrono::milliseconds grace) {
    const std::lock_guard lock{lifecycle_mutex_};
    if (!started_) return;
    if (!stop_requested_) {
        stop_requested_ = true;
        net::post(ioc_, [this, grace] { begin_stop(grace); });
    }
    // The network thread cannot join itself: a stop begun from a handler completes on its
    // own and the thread is joined by a later stop() or the destructor.
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

WorkerStats ClientCore::stats() const {
    const std::lock_guard lock{published_mutex_};
    return stats_;
}

std::vector<std::string> ClientCore::connected_urls() const {
    const std::lock_guard lock{published_mutex_};
    return connected_urls_;
}

void ClientCore::post_answer(std::shared_ptr<Responder::State> state, std::string frame,
                             Outcome outcome) {
    // Capturing `this` is safe: the handler only runs on the network thread, which the core
    // joins before it is destroyed; an unrun handler is simply destroyed with the io_context.
    net::post(ioc_, [this, state = std::move(state), frame = std::move(frame), outcome]() mutable {
        deliver_answer(*state, std::move(frame), outcome);
    });
}

void ClientCore::post_frame(std::shared_ptr<Responder::State> state, std::string frame) {
    net::post(ioc_, [this, state = std::move(state), frame = std::move(frame)]() mutable {
        NodeLink* link = link_of(state->connection_id());
        if (state->answered() || !link) return;
        const auto it = link->in_flight.find(state->task_id());
        if (it == link->in_flight.end() || it->second != state) return;
        send(*link, std::move(frame));
    });
}

NodeLink* ClientCore::add_link(const std::string& url, bool seed) {
    if (NodeLink* existing = find_link(url)) return existing;
    auto parsed = parse_ws_url(url);
    if (!parsed) {
        spdlog::warn("worker client: ignoring node URL '{}': not ws:// or wss://host[:port]/path",
                     url);
        return nullptr;
    }
    // Seeded over TLS, the client never follows a node to plain ws:// (its token and its
    // tasks would leave TLS on the word of a cluster list).
    if (!seed && !parsed->tls && tls_seeded_) {
        spdlog::warn("worker client: ignoring node URL '{}': the seeds are wss://, it is not", url);
        return nullptr;
    }
    links_.push_back(std::make_unique<NodeLink>(
        ioc_, url, std::move(*parsed), seed,
        util::RetryBackoff{options_.reconnect_min, options_.reconnect_max,
                           std::random_device{}()}));
    return links_.back().get();
}

void ClientCore::remove_link(const std::string& url) {
    const auto it = std::find_if(links_.begin(), links_.end(),
                                 [&url](const auto& link) { return link->url == url; });
    if (it == links_.end()) return;
    NodeLink& link = **it;
    spdlog::info("worker client: node {} left the cluster; closing", url);
    // Its tasks stay unanswered: the node re-arms them when the connection goes. They leave
    // the credit window now.
    if (const auto connection = connections_.find(link.connection_id);
        connection != connections_.end()) {
        connection->second->close();
    }
    const auto frames = ledger_.close(link.connection_id, CreditLedger::Clock::now());
    links_.erase(it);
    apply_credit(frames);
}

NodeLink* ClientCore::find_link(std::string_view url) {
    for (const auto& link : links_) {
        if (link->url == url) return link.get();
    }
    return nullptr;
}

NodeLink* ClientCore::link_of(std::uint64_t connection_id) {
    if (connection_id == 0) return nullptr;
    for (const auto& link : links_) {
        if (link->connection_id == connection_id) return link.get();
    }
    return nullptr;
}

void ClientCore::connect(NodeLink& link) {
    const std::uint64_t id = ++next_connection_id_;
    auto connection = make_node_connection(
        ioc_, link.ws_url, connection_settings_,
        NodeConnection::Events{[this, id] { on_opened(id); },
                               [this, id](std::string_view text) { on_received(id, text); },
                               [this, id](const error_code& ec) { on_closed(id, ec); }},
        tls_.get());
    connections_.emplace(id, connection);
    link.connection_id = id;
    link.phase = NodeLink::Phase::connecting;
    if (link.attempts++ > 0) count([](WorkerStats& s) { ++s.reconnects; });
    connection->start();
}

void ClientCore::schedule_reconnect(NodeLink& link) {
    link.phase = NodeLink::Phase::waiting;
    const auto delay = link.backoff.next();
    spdlog::debug("worker client: reconnecting to {} in {} ms", link.url, delay.count());
    link.retry_timer.expires_after(delay);
    // Looked up again by URL: the link may have left the cluster meanwhile.
    link.retry_timer.async_wait([this, url = link.url](const error_code& ec) {
        if (ec || stopping_) return;
        NodeLink* current = find_link(url);
        if (current && current->phase == NodeLink::Phase::waiting) connect(*current);
    });
}

void ClientCore::schedule_rebalance() {
    rebalance_timer_.expires_after(options_.rebalance_interval);
    rebalance_timer_.async_wait([this](const error_code& ec) {
        if (ec || stopping_) return;
        apply_credit(ledger_.tick(CreditLedger::Clock::now()));
        schedule_rebalance();
    });
}

void ClientCore::send(const NodeLink& link, std::string frame) {
    if (const auto it = connections_.find(link.connection_id); it != connections_.end()) {
        it->second->send(std::move(frame));
    }
}

void ClientCore::on_opened(std::uint64_t connection_id) {
    NodeLink* link = link_of(connection_id);
    if (!link) return;
    spdlog::info("worker client: connected to {}", link->url);
    link->phase = NodeLink::Phase::open;
    // Its hello goes out once the window has room for it (often at once).
    apply_credit(ledger_.open(connection_id, CreditLedger::Clock::now()));
    publish();
}

void ClientCore::on_closed(std::uint64_t connection_id, const error_code& ec) {
    connections_.erase(connection_id);
    if (NodeLink* link = link_of(connection_id)) {
        const bool drained = link->phase == NodeLink::Phase::draining;
        const bool was_up = drained || link->phase == NodeLink::Phase::open;
        if (!link->in_flight.empty()) {
            spdlog::warn("worker client: lost {} with {} task(s) unanswered; the node re-arms them",
                         link->url, link->in_flight.size());
        }
        link->in_flight.clear();
        link->connection_id = 0;
        if (stopping_) {
            link->phase = NodeLink::Phase::waiting;
        } else if (drained && !link->seed) {
            spdlog::info("worker client: {} drained; waiting for it to be listed again", link->url);
            link->phase = NodeLink::Phase::dormant;
        } else {
            if (drained) {
                spdlog::info("worker client: seed {} drained; reconnecting after backoff",
                             link->url);
            } else if (was_up) {
                spdlog::warn("worker client: disconnected from {}: {}", link->url, ec.message());
            } else if (++link->failures % kConnectFailuresPerWarning == 1) {
                spdlog::warn("worker client: cannot connect to {} ({} attempt(s) so far): {}",
                             link->url, link->failures, ec.message());
            } else {
                spdlog::debug("worker client: cannot connect to {}: {}", link->url, ec.message());
            }
            schedule_reconnect(*link);
        }
        apply_credit(ledger_.close(connection_id, CreditLedger::Clock::now()));
        publish();
    }
    if (stop_finished_) return close_when_settled();
    if (stopping_ && in_flight_count() == 0) grace_timer_.cancel();
}

void ClientCore::begin_stop(std::chrono::milliseconds grace) {
    stopping_ = true;
    spdlog::info("worker client: stopping; {} task(s) in flight", in_flight_count());
    for (const auto& link : links_) link->retry_timer.cancel();
    rebalance_timer_.cancel();
    settle_timer_.cancel();
    for (const auto& [id, connection] : connections_) {
        if (connection->is_open()) {
            connection->send(protocol::encode(protocol::Credit{0}));
        } else {
            connection->close();  // not upgraded yet: abandon the attempt
        }
    }
    if (in_flight_count() == 0) return finish_stop();
    grace_timer_.expires_after(grace);
    grace_timer_.async_wait([this](const error_code&) { finish_stop(); });
}

void ClientCore::finish_stop() {
    if (stop_finished_) return;
    stop_finished_ = true;
    for (const auto& link : links_) {
        for (auto it = link->in_flight.begin(); it != link->in_flight.end();) {
            // A task whose claim fails was answered and its answer is on its way here:
            // keep it, so that the answer still goes out before the close.
            if (!it->second->claim()) {
                ++it;
                continue;
            }
            send(*link, protocol::encode(protocol::Fail{it->first, "worker stopping", true}));
            count([](WorkerStats& s) { ++s.tasks_failed; });
            it = link->in_flight.erase(it);
        }
    }
    publish();
    work_.reset();
    // A node that does not answer the close handshake must not hold stop() up.
    close_deadline_.expires_after(options_.close_timeout);
    close_deadline_.async_wait([this](const error_code& ec) {
        if (ec) return;
        spdlog::warn("worker client: {} connection(s) did not close in time; cutting them",
                     connections_.size());
        ioc_.stop();
    });
    close_when_settled();
}

void ClientCore::close_when_settled() {
    if (in_flight_count() > 0) return;
    for (const auto& [id, connection] : connections_) connection->close();
    if (connections_.empty()) ioc_.stop();
}

std::size_t ClientCore::in_flight_count() const {
    std::size_t total = 0;
    for (const auto& link : links_) total += link->in_flight.size();
    return total;
}

void ClientCore::publish() {
    std::vector<std::string> urls;
    for (const auto& link : links_) {
        if (link->phase == NodeLink::Phase::open || link->phase == NodeLink::Phase::draining) {
            urls.push_back(link->url);
        }
    }
    const auto in_flight = in_flight_count();
    const std::lock_guard lock{published_mutex_};
    stats_.connected_nodes = urls.size();
    stats_.tasks_in_flight = in_flight;
    connected_urls_ = std::move(urls);
}

}  // namespace outboxd::sdk::detail
