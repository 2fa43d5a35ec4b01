#include "outboxd/app/node.hpp"

#include <fstream>
#include <random>
#include <thread>

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "outboxd/auth/credential_book.hpp"
#include "outboxd/auth/jwt_grants.hpp"
#include "outboxd/engine/engine_directory.hpp"
#include "outboxd/http/server.hpp"
#include "outboxd/sinks/targets/target_sinks.hpp"
#include "outboxd/sinks/websocket/websocket_sinks.hpp"
#include "outboxd/store/migrator.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/secret_box.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::app {
namespace {

namespace net = boost::asio;

constexpr auto kMigrateDeadline = std::chrono::seconds{60};
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

// The keys of HTTP targets' secrets at rest (checked with the configuration). Without any,
// the operator is told plainly at every start that those secrets are stored in clear.
std::shared_ptr<const util::SecretBox> secret_box(const config::Config& c) {
    if (!c.secrets_key) {
        spdlog::warn(
            "event=target_secrets_in_clear reason=\"OUTBOXD_SECRETS_KEY is not set: targets' "
            "signing secrets, header values and broker credentials are stored in clear in the "
            "database\"");
        return nullptr;
    }
    auto box = std::make_shared<const util::SecretBox>(util::SecretBox::parse(*c.secrets_key));
    spdlog::info("event=target_secrets_encrypted key_id={}", box->sealing_key_id());
    return box;
}

worker::protocol::ShardList shard_list(const store::ShardRanges& shards) {
    worker::protocol::ShardList list;
    for (const auto& [lo, hi] : shards.ranges()) list.emplace_back(lo, hi);
    return list;
}

// One served database's engine. `incarnation` is the node's, the same in every database.
engine::EngineSettings engine_settings(const config::Config& c, const config::Database& database,
                                       const std::string& incarnation,
                                       std::shared_ptr<const util::SecretBox> secrets,
                                       std::size_t index, std::string task_id_suffix) {
    engine::EngineSettings s;
    s.name = database.name;
    s.database_url = database.url;
    s.listen_url = database.listen_url;
    // One database was migrated before the node listened (node start fails without it);
    // several migrate each on its own, so that one out of reach delays only itself.
    s.migrate = c.migrate_on_start && !c.databases.empty();
    s.secrets = std::move(secrets);
    auto& d = s.dispatch;
    d.poll_interval = c.poll_interval;
    d.claim_lookback = c.claim_lookback;
    d.batch_size = c.batch_size;
    d.max_attempts = c.max_attempts;
    d.backoff = {c.backoff_base, c.backoff_multiplier, c.backoff_max};
    d.task_timeout = c.task_timeout;
    d.task_id_suffix = std::move(task_id_suffix);
    d.database = database.name;
    d.database_index = index;
    auto& m = s.maintenance;
    m.liveness = c.lease_ttl;
    m.reconcile_interval = std::min(std::chrono::milliseconds{1000}, c.lease_ttl / 2);
    m.retention = c.retention;
    m.stale = d.task_timeout + d.stale_grace;
    m.stale_grace = d.stale_grace;
    s.member = {c.node_id, incarnation, c.advertise_url, c.lease_ttl};
    s.default_max_in_flight = c.default_max_in_flight;
    s.settings_refresh = c.quota_cache_ttl;
    s.api_statement_timeout = c.api_statement_timeout;
    return s;
}

http::ServerSettings server_settings(const config::Config& c) {
    http::ServerSettings s;
    s.host = c.listen.host;
    s.port = c.listen.port;
    s.max_body_bytes = c.max_body_bytes;
    s.max_connections = connection_cap(c.max_connections);
    s.http_idle_timeout = c.http_idle_timeout;
    s.default_max_in_flight = c.default_max_in_flight;
    s.metrics_private = c.metrics_private;
    s.control_database = config::control_database(config::served_databases(c), c).name;
    if (c.tls_cert_file && c.tls_key_file)
        s.tls = http::TlsFiles{*c.tls_cert_file, *c.tls_key_file};
    // ws://host:port/v1/workers
    const auto scheme = c.advertise_url.find("://");
    if (scheme != std::string::npos) {
        const auto authority =
            c.advertise_url.substr(scheme + 3, c.advertise_url.find('/', scheme + 3) - scheme - 3);
        s.node_hosts.push_back(http::host_of(authority));
    }
    return s;
}

sinks::WebSocketSettings websocket_settings(const config::Config& c) {
    sinks::WebSocketSettings s;
    s.max_frame_bytes = c.max_frame_bytes;
    s.max_result_bytes = c.max_result_bytes;
    s.max_write_queue = c.max_write_queue;
    s.max_write_queue_bytes = c.max_write_queue_bytes;
    return s;
}

// Refused at start, naming the setting, like every other bad setting.
sinks::targets::TargetsSettings target_settings(const config::Config& c) {
    using sinks::targets::HostPolicy;
    if (const auto problem = HostPolicy::list_problem(c.http_allowed_hosts)) {
        throw std::runtime_error("--http-allowed-hosts (OUTBOXD_HTTP_ALLOWED_HOSTS): " + *problem);
    }
    sinks::targets::TargetsSettings s;
    s.policy = HostPolicy::parse(c.http_allowed_hosts);
    s.refresh = c.quota_cache_ttl;
    s.max_response_bytes = c.http_max_response_bytes;
    s.max_result_bytes = c.max_result_bytes;
    return s;
}

// The verifier of bearer JWTs when OUTBOXD_JWT_KEYS_FILE is set; refused at start, naming the
// setting, when its keys cannot be used.
std::shared_ptr<const auth::BearerVerifier> jwt_verifier(const config::Config& c) {
    if (!c.jwt_keys_file) return nullptr;
    std::ifstream in{*c.jwt_keys_file};
    if (!in) {
        throw std::runtime_error("--jwt-keys-file (OUTBOXD_JWT_KEYS_FILE): cannot read '" +
                                 *c.jwt_keys_file + "'");
    }
    auth::JwtSettings settings;
    settings.keys_text.assign(std::istreambuf_iterator<char>{in}, {});
    settings.issuer = c.jwt_issuer;
    settings.audience = c.jwt_audience;
    settings.clock_skew = c.jwt_clock_skew;
    auto loaded = auth::JwtVerifier::load(settings);
    if (auto* why = std::get_if<std::string>(&loaded)) {
        throw std::runtime_error("--jwt-keys-file (OUTBOXD_JWT_KEYS_FILE): " + *why);
    }
    auto& verifier = std::get<auth::JwtVerifier>(loaded);
    spdlog::info("event=jwt_keys_loaded keys={} issuer=\"{}\" audience=\"{}\"",
                 verifier.key_count(), util::log_safe(c.jwt_issuer),
                 util::log_safe(c.jwt_audience));
    return std::make_shared<auth::JwtGrants>(std::move(verifier));
}

}  // namespace

// Declaration order is destruction order reversed, and it matters: the io_context outlives
// everything holding its executor, and the engines (whose lanes post into the loop) go after
// the server and the sinks that reach them.
class Node::Impl {
public:
    explicit Impl(config::Config c)
        : config(std::move(c)),
          metrics(prometheus_registry),
          engines(registry),
          websockets(websocket_settings(config), engines, metrics,
                     [this] { return cluster_info(); }),
          targets(target_settings(config)),
          authenticator(auth::BootstrapTokens{config.admin_token, config.worker_token},
                        jwt_verifier(config)),
          server(ioc, server_settings(config),
                 {engines, prometheus_registry, metrics,
                  [this] { return engines.ready() && authenticator.managed_loaded(); },
                  &websockets.upgrades(), authenticator,
                  [this] {
                      if (credentials) credentials->read_now();
                  }}),
          signals(ioc) {
        // The sink kinds of this node, each wired the same way.
        providers = {&websockets, &targets};
        const auto served = config::served_databases(config);
        const auto incarnation = config.node_id + "/" + boot_id();
        const auto secrets = secret_box(config);
        for (const auto& database : served) {
            add_engine(engine_settings(config, database, incarnation, secrets,
                                       engines.engines().size(), engines.next_task_id_suffix()));
        }
        // Credentials live in the control database: read once its schema is current.
        auto& control = *engines.find(config::control_database(served, config).name);
        credentials.emplace(ioc.get_executor(), control.admin_lane(), authenticator,
                            config.quota_cache_ttl, metrics.fault("credentials"));
        control.on_started([this] { credentials->start(); });
        credentials->on_read([this] {
            websockets.revalidate(
                [this](const auth::Grant& grant) { return authenticator.still_valid(grant); });
            warn_if_open();
        });
        server.start();
        // With port 0 the derived advertise URL names port 0: name the bound port instead.
        const std::string unbound = ":0/v1/workers";  // ws:// and wss:// alike
        if (config.advertise_url.ends_with(unbound)) {
            config.advertise_url.replace(config.advertise_url.size() - unbound.size(),
                                         unbound.size(),
                                         ":" + std::to_string(server.port()) + "/v1/workers");
            for (const auto& engine : engines.engines())
                engine->set_advertise_url(config.advertise_url);
        }
        spdlog::info("event=listening node={} incarnation={} address={}:{} advertise={}",
                     config.node_id, engines.primary().member().settings().incarnation,
                     config.listen.host, server.port(), config.advertise_url);
    }

    // An engine for one database, with every sink kind's state in it.
    void add_engine(engine::EngineSettings settings) {
        auto& engine = engines.add(std::make_unique<engine::OutboxEngine>(
            engine::EngineContext{ioc.get_executor(), registry, metrics, engines},
            std::move(settings)));
        for (auto* provider : providers) {
            engine.add_sinks(provider->for_engine(
                {engine.name(), ioc.get_executor(), engine.admin_lane(), engines, metrics}));
        }
        engine.on_cluster_change([this] {
            for (auto* provider : providers) provider->cluster_changed();
        });
    }

    // What workers are told of the fleet: the live nodes of every database this node serves,
    // each with the shards it owns in each of them.
    sinks::ClusterInfo cluster_info() const {
        const auto& member = engines.primary().member();
        sinks::ClusterInfo info{member.settings().node_id, member.settings().advertise_url, {}};
        const auto& first = engines.primary().name();
        for (const auto& node : engines.fleet()) {
            if (node.draining) continue;
            worker::protocol::NodeInfo out{node.node_id, node.url, {}, {}};
            for (const auto& [database, shards] : node.databases) {
                auto list = shard_list(shards);
                if (database == first) out.shards = list;
                out.databases.push_back({database, std::move(list)});
            }
            info.nodes.push_back(std::move(out));
        }
        return info;
    }

    void start() { engines.start(); }

    // Said once, when the node first knows it has no credential at all.
    void warn_if_open() {
        if (warned_open || authenticator.guarded()) return;
        warned_open = true;
        spdlog::warn(
            "event=node_open reason=\"no credential is configured: the API and the worker socket "
            "are open to anyone who can reach {}:{}; set OUTBOXD_ADMIN_TOKEN (README, "
            "Security)\"",
            config.listen.host, server.port());
    }

    void begin_drain() {
        if (draining) return;
        draining = true;
        spdlog::info("event=drain_started outstanding={} deadline_ms={}", engines.outstanding(),
                     config.drain_timeout.count());
        server.stop_accepting();
        for (auto* provider : providers) provider->drain();
        drain_timer.expires_after(config.drain_timeout);
        drain_timer.async_wait([this](auto ec) {
            if (ec || drained) return;
            spdlog::warn("event=drain_deadline abandoned={}", engines.outstanding());
            engines.abandon_outstanding("node drain deadline passed");
        });
        engines.drain([this] {
            drained = true;
            drain_timer.cancel();
            for (auto* provider : providers) provider->stop();
            credentials->stop();
            engines.stop();
            // Let close frames go out, then end the loop.
            drain_timer.expires_after(std::chrono::milliseconds{100});
            drain_timer.async_wait([this](auto) {
                spdlog::info("event=drained node={}", config.node_id);
                ioc.stop();
            });
        });
    }

    config::Config config;
    prometheus::Registry prometheus_registry;
    metrics::NodeMetrics metrics;
    net::io_context ioc{1};
    worker::WorkerRegistry registry;
    engine::EngineDirectory engines;
    sinks::WebSocketSinks websockets;
    sinks::targets::TargetSinks targets;
    std::vector<sinks::SinkProvider*> providers;
    auth::Authenticator authenticator;
    std::optional<auth::CredentialBook> credentials;
    bool warned_open = false;
    http::HttpServer server;
    net::signal_set signals;
    net::steady_timer drain_timer{ioc};
    bool draining = false;
    bool drained = false;
};

Node::Node(config::Config config) {
    if (config.migrate_on_start && config.databases.empty())
        migrate_with_retry(config.database_url);
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
