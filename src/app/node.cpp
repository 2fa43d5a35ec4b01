#include "outboxd/app/node.hpp"

#include <random>
#include <thread>

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "outboxd/cluster/cluster_member.hpp"
#include "outboxd/dispatch/dispatcher.hpp"
#include "outboxd/http/server.hpp"
#include "outboxd/push/http_targets.hpp"
#include "outboxd/store/migrator.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/store/wake_listener.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::app {
namespace {

namespace net = boost::asio;

constexpr auto kMigrateDeadline = std::chrono::seconds{60};
constexpr auto kWakeFollowUp = std::chrono::milliseconds{3};
// Descriptors a node needs besides its connections: database lanes, the listener, logs.
constexpr rlim_t kReservedDescriptors = 64;

std::string boot_id() {
    std::mt19937_64 random{std::random_device{}()};
    char buffer[13];
    std::snprintf(buffer, sizeof buffer, "%012llx",
                  static_cast<unsigned long long>(random() & 0xffffffffffffULL));
    return buffer;
}

// Nodes may start before the database accepts connections (compose, CI): retry for a while.
void migrate_with_retry(const std::string& url) {
    const auto deadline = std::chrono::steady_clock::now() + kMigrateDeadline;
    for (auto delay = std::chrono::milliseconds{200};;
         delay = std::min(delay * 2, std::chrono::milliseconds{3000})) {
        try {
            const auto report = store::migrate(url);
            spdlog::info("event=migrated version={} applied={}", report.current_version,
                         report.applied.size());
            return;
        } catch (const store::UnavailableError& error) {
            if (std::chrono::steady_clock::now() + delay > deadline) {
                throw std::runtime_error(std::string{"database unreachable: "} + error.what());
            }
            spdlog::warn("event=database_unreachable retry_in_ms={} error=\"{}\"", delay.count(),
                         error.what());
            std::this_thread::sleep_for(delay);
        }
    }
}

// The connection cap, lowered to what the descriptor limit leaves room for: past the limit,
// accepts fail, and a 503 is a clearer answer than a connection that hangs in the backlog.
std::size_t connection_cap(std::size_t configured) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return configured;
    const auto room =
        limit.rlim_cur > kReservedDescriptors ? limit.rlim_cur - kReservedDescriptors : 1;
    if (configured <= room) return configured;
    spdlog::warn("event=connection_cap_lowered configured={} cap={} nofile_limit={}", configured,
                 room, limit.rlim_cur);
    return room;
}

dispatch::DispatchSettings dispatch_settings(const config::Config& c) {
    dispatch::DispatchSettings s;
    s.poll_interval = c.poll_interval;
    s.claim_lookback = c.claim_lookback;
    s.batch_size = c.batch_size;
    s.max_attempts = c.max_attempts;
    s.backoff = {c.backoff_base, c.backoff_multiplier, c.backoff_max};
    s.task_timeout = c.task_timeout;
    s.maintenance.liveness = c.lease_ttl;
    s.maintenance.reconcile_interval = std::min(std::chrono::milliseconds{1000}, c.lease_ttl / 2);
    s.maintenance.retention = c.retention;
    return s;
}

http::ServerSettings server_settings(const config::Config& c) {
    http::ServerSettings s;
    s.host = c.listen.host;
    s.port = c.listen.port;
    s.worker_token = c.worker_token;
    s.admin_token = c.admin_token;
    s.max_frame_bytes = c.max_frame_bytes;
    s.max_result_bytes = c.max_result_bytes;
    s.max_body_bytes = c.max_body_bytes;
    s.max_write_queue = c.max_write_queue;
    s.max_write_queue_bytes = c.max_write_queue_bytes;
    s.max_connections = connection_cap(c.max_connections);
    s.http_idle_timeout = c.http_idle_timeout;
    s.default_max_in_flight = c.default_max_in_flight;
    if (c.tls_cert_file && c.tls_key_file)
        s.tls = http::TlsFiles{*c.tls_cert_file, *c.tls_key_file};
    return s;
}

// Refused at start, naming the setting, like every other bad setting.
push::PushSettings push_settings(const config::Config& c) {
    if (const auto problem = push::HostPolicy::list_problem(c.http_allowed_hosts)) {
        throw std::runtime_error("--http-allowed-hosts (OUTBOXD_HTTP_ALLOWED_HOSTS): " + *problem);
    }
    push::PushSettings s;
    s.policy = push::HostPolicy::parse(c.http_allowed_hosts);
    s.refresh = c.quota_cache_ttl;
    s.max_response_bytes = c.http_max_response_bytes;
    s.max_result_bytes = c.max_result_bytes;
    return s;
}

// Lanes the loop feeds one job at a time (claims, outcomes) or a few (maintenance, cluster)
// hold a handful; the API lane takes one job per request in flight.
constexpr std::size_t kInternalLaneCapacity = 16;
constexpr std::size_t kApiLaneCapacity = 1024;

dispatch::LaneSettings lane(std::string name, metrics::NodeMetrics& metrics,
                            std::size_t capacity = kInternalLaneCapacity) {
    dispatch::LaneSettings s;
    s.rejected = &metrics.db_lane_rejected_total.Add({{"lane", name}});
    s.name = std::move(name);
    s.capacity = capacity;
    return s;
}

// Claims need not wait for the WAL flush: one lost in a crash is claimed again.
dispatch::LaneSettings claims_lane(std::string name, metrics::NodeMetrics& metrics) {
    auto s = lane(std::move(name), metrics);
    s.commits = store::OutboxSession::Commits::relaxed;
    return s;
}

// A request must not hold its lane (and every request queued behind it) for minutes.
dispatch::LaneSettings api_lane(metrics::NodeMetrics& metrics, std::chrono::milliseconds timeout) {
    auto s = lane("api", metrics, kApiLaneCapacity);
    s.statement_timeout = timeout;
    return s;
}

}  // namespace

// Declaration order is destruction order reversed, and it matters: the io_context outlives
// everything holding its executor, and the DB lanes (whose threads post into the loop) are
// joined before it goes.
class Node::Impl {
public:
    explicit Impl(config::Config c)
        : config(std::move(c)),
          metrics(prometheus_registry),
          claims(claims_lane("claims", metrics), config.database_url),
          claims_apart(claims_lane("claims_apart", metrics), config.database_url),
          outcomes(lane("outcomes", metrics), config.database_url),
          maintenance(lane("maintenance", metrics), config.database_url),
          api(api_lane(metrics, config.api_statement_timeout), config.database_url),
          cluster_lane(lane("cluster", metrics), config.database_url),
          namespaces(ioc.get_executor(), api, config.default_max_in_flight, config.quota_cache_ttl),
          member(ioc.get_executor(), cluster_lane, metrics,
                 {config.node_id, config.node_id + "/" + boot_id(), config.advertise_url,
                  config.lease_ttl}),
          dispatcher(ioc.get_executor(), {claims, claims_apart, outcomes, maintenance}, registry,
                     namespaces, metrics, dispatch_settings(config),
                     [this] { return member.owner(); }),
          targets(ioc.get_executor(), api, registry, dispatcher, metrics, push_settings(config)),
          server(ioc, server_settings(config),
                 {dispatcher, registry, member, namespaces, api, prometheus_registry, metrics,
                  [this] { return member.healthy(); }, &targets}),
          signals(ioc) {
        server.start();
        // With port 0 the derived advertise URL names port 0: name the bound port instead.
        const std::string unbound = ":0/v1/workers";  // ws:// and wss:// alike
        if (config.advertise_url.ends_with(unbound)) {
            config.advertise_url.replace(config.advertise_url.size() - unbound.size(),
                                         unbound.size(),
                                         ":" + std::to_string(server.port()) + "/v1/workers");
            member.set_advertise_url(config.advertise_url);
        }
        spdlog::info("event=listening node={} incarnation={} address={}:{} advertise={}",
                     config.node_id, member.settings().incarnation, config.listen.host,
                     server.port(), config.advertise_url);
    }

    void start() {
        member.on_change([this] {
            server.broadcast_cluster();
            // New shards may hold a dead node's claims or cancelled rows: repair them now.
            dispatcher.reconcile();
            dispatcher.ranges_changed();
            push::ShardCounts owned;
            for (const auto& node : member.nodes()) owned[node.incarnation] = node.shards.count();
            // Its own claimable shards, as every claim of this node sees them.
            owned[member.settings().incarnation] = member.owner().ranges.count();
            targets.set_cluster(std::move(owned), member.settings().incarnation);
        });
        member.start();
        namespaces.start();
        dispatcher.start();
        targets.start();
        wake = std::make_unique<store::WakeListener>(
            config.database_url, [this](const store::WakeNotice& notice) {
                net::post(ioc, [this, notice] { on_wake(notice); });
            });
    }

    // A wake claims the routes it names at once, and once more shortly after: transactions
    // that committed alongside the one that notified, into the same routes, skipped their
    // own NOTIFY (migration 0007). A wake from the front (a resume, on any node) reads from
    // the front of the index; one that names no route looks everywhere.
    void on_wake(const store::WakeNotice& notice) {
        if (!notice.cancelled.empty()) dispatcher.cancel_tasks(notice.cancelled);
        if (notice.from_front) dispatcher.claim_from_front();
        dispatcher.woken(notice.routes, notice.anywhere);
        follow_up.insert(follow_up.end(), notice.routes.begin(), notice.routes.end());
        if (follow_up_armed) return;
        follow_up_armed = true;
        follow_up_timer.expires_after(kWakeFollowUp);
        follow_up_timer.async_wait([this](auto ec) {
            follow_up_armed = false;
            auto queues = std::exchange(follow_up, {});
            if (!ec) dispatcher.woken(queues, false);
        });
    }

    void begin_drain() {
        if (draining) return;
        draining = true;
        spdlog::info("event=drain_started outstanding={} deadline_ms={}", dispatcher.outstanding(),
                     config.drain_timeout.count());
        server.stop_accepting();
        server.drain_workers();
        drain_timer.expires_after(config.drain_timeout);
        drain_timer.async_wait([this](auto ec) {
            if (ec || drained) return;
            spdlog::warn("event=drain_deadline abandoned={}", dispatcher.outstanding());
            dispatcher.abandon_outstanding("node drain deadline passed");
        });
        dispatcher.drain([this] {
            drained = true;
            drain_timer.cancel();
            member.leave([this] {
                server.close_workers();
                targets.stop();
                dispatcher.stop();
                namespaces.stop();
                wake.reset();
                // Let close frames go out, then end the loop.
                drain_timer.expires_after(std::chrono::milliseconds{100});
                drain_timer.async_wait([this](auto) {
                    spdlog::info("event=drained node={}", config.node_id);
                    ioc.stop();
                });
            });
        });
    }

    config::Config config;
    prometheus::Registry prometheus_registry;
    metrics::NodeMetrics metrics;
    net::io_context ioc{1};
    dispatch::DbLane claims;
    dispatch::DbLane claims_apart;
    dispatch::DbLane outcomes;
    dispatch::DbLane maintenance;
    dispatch::DbLane api;
    dispatch::DbLane cluster_lane;
    worker::WorkerRegistry registry;
    dispatch::NamespaceCache namespaces;
    cluster::ClusterMember member;
    dispatch::Dispatcher dispatcher;
    push::HttpTargets targets;
    http::HttpServer server;
    net::signal_set signals;
    net::steady_timer drain_timer{ioc};
    net::steady_timer follow_up_timer{ioc};
    bool follow_up_armed = false;
    std::vector<std::pair<std::string, std::string>> follow_up;  // queues woken since it was armed
    bool draining = false;
    bool drained = false;
    std::unique_ptr<store::WakeListener> wake;
};

Node::Node(config::Config config) {
    if (config.migrate_on_start) migrate_with_retry(config.database_url);
    impl_ = std::make_unique<Impl>(std::move(config));
}

Node::~Node() = default;

int Node::run(bool handle_signals) {
    auto& impl = *impl_;
    if (handle_signals) {
        impl.signals.add(SIGTERM);
        impl.signals.add(SIGINT);
        impl.signals.async_wait([&impl](const boost::system::error_code& ec, int signal) {
            if (ec) return;
            spdlog::info("event=signal signal={}", signal);
            impl.begin_drain();
        });
    }
    impl.start();
    // The last line of defence: every handler catches its own faults, but one that escapes
    // must end no more than that handler, never the node. run() may be called again after it
    // threw; the loop goes on with everything else.
    while (true) {
        try {
            impl.ioc.run();
            return 0;
        } catch (const std::exception& error) {
            impl.metrics.fault("loop").Increment();
            spdlog::error("event=fault where=loop error=\"{}\"", util::log_safe(error.what()));
        } catch (...) {
            impl.metrics.fault("loop").Increment();
            spdlog::error("event=fault where=loop error=unknown");
        }
    }
}

void Node::request_stop() {
    net::post(impl_->ioc, [impl = impl_.get()] { impl->begin_drain(); });
}

std::uint16_t Node::port() const { return impl_->server.port(); }

}  // namespace outboxd::app
