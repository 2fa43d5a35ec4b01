// outboxd: `serve` (the default) runs a node; `migrate` applies migrations and exits;
// `reseal-secrets` encrypts targets' secrets under the first secrets key and exits; `ctl`
// operates a cluster over its HTTP API; `broker` sets up the streams and queues broker targets
// publish to.

#include <iostream>
#include <memory>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/app/embedded_postgres.hpp"
#include "outboxd/app/node.hpp"
#include "outboxd/broker_admin/broker_cli.hpp"
#include "outboxd/config/config.hpp"
#include "outboxd/ctl/ctl.hpp"
#include "outboxd/store/migrator.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/store/target_store.hpp"

namespace {

void set_log_level(const std::string& level) {
    spdlog::set_level(spdlog::level::from_str(level == "warn" ? "warning" : level));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
}

// Every target's secrets encrypted under the first key (README, "Secrets at rest"): values in
// clear and values under older keys. 1 when some target could not be read.
int reseal_secrets(const outboxd::config::Config& config) {
    namespace store = outboxd::store;
    if (!config.secrets_key) {
        std::cerr << "outboxd: reseal-secrets needs the keys: set --secrets-key "
                     "(OUTBOXD_SECRETS_KEY) or --secrets-key-file (OUTBOXD_SECRETS_KEY_FILE)\n";
        return 2;
    }
    auto box = std::make_shared<const outboxd::util::SecretBox>(
        outboxd::util::SecretBox::parse(*config.secrets_key));
    const auto key_id = box->sealing_key_id();
    bool all_read = true;
    // HTTP targets are kept per database.
    for (const auto& database : outboxd::config::served_databases(config)) {
        store::OutboxSession session{database.url, store::OutboxSession::Uses::targets};
        store::TargetStore targets{session, box};
        const auto report = targets.reseal();
        spdlog::info(
            "event=secrets_resealed database={} key_id={} targets={} values={} unreadable={}",
            database.name, key_id, report.targets, report.values, report.unreadable.size());
        for (const auto& [name, why] : report.unreadable) {
            spdlog::error("event=secrets_unreadable database={} target=\"{}\" reason=\"{}\"",
                          database.name, name, why);
        }
        all_read = all_read && report.unreadable.empty();
    }
    return all_read ? 0 : 1;
}

int run(int argc, char** argv) {
    // The CLI has words and flags of its own, none of a node's settings.
    if (argc > 1 && std::string_view{argv[1]} == "ctl") {
        return outboxd::ctl::run(argc - 1, argv + 1, std::cout, std::cerr);
    }
    if (argc > 1 && std::string_view{argv[1]} == "broker") {
        return outboxd::broker_admin::run_cli(argc - 1, argv + 1, std::cout, std::cerr);
    }
    CLI::App app{"outboxd: a horizontally scaled dispatcher for a PostgreSQL transactional outbox"};
    app.set_help_all_flag("--help-all", "Show help for every subcommand");
    outboxd::config::Options options;
    options.bind(app);
    auto* serve = app.add_subcommand("serve", "Run a node (the default)");
    auto* migrate = app.add_subcommand("migrate", "Apply migrations and exit");
    auto* reseal = app.add_subcommand(
        "reseal-secrets",
        "Encrypt every HTTP target's secrets under the first key of --secrets-key and exit");
    auto* ctl =
        app.add_subcommand("ctl", "Operate a cluster over its HTTP API (outboxd ctl --help)");
    ctl->allow_extras();
    auto* broker = app.add_subcommand(
        "broker", "Set up a stream or queue for broker targets (outboxd broker --help)");
    broker->allow_extras();
    app.require_subcommand(0, 1);
    // Settings may follow the subcommand too: `outboxd migrate --database-url …`.
    serve->fallthrough();
    migrate->fallthrough();
    reseal->fallthrough();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    }
    (void)serve;
    if (ctl->parsed()) {
        std::cerr << "outboxd: ctl takes no node settings; run it as `outboxd ctl …`\n";
        return 2;
    }

    outboxd::config::Config config;
    try {
        config = options.resolve();
    } catch (const outboxd::config::ConfigError& error) {
        std::cerr << "outboxd: invalid configuration: " << error.what() << "\n";
        return 2;
    }
    set_log_level(config.log_level);
    if (config.database_url.empty() && config.databases.empty()) {
        // Demo mode: a private local PostgreSQL, shared by demo nodes on this machine.
        config.database_url =
            outboxd::app::ensure_embedded_postgres(outboxd::app::default_embedded_dir());
    }
    if (migrate->parsed()) {
        for (const auto& database : outboxd::config::served_databases(config)) {
            const auto report = outboxd::store::migrate(database.url);
            spdlog::info("event=migrated database={} version={} applied={}", database.name,
                         report.current_version, report.applied.size());
        }
        return 0;
    }
    if (reseal->parsed()) return reseal_secrets(config);
    outboxd::app::Node node{config};
    return node.run();
}

}  // namespace

// Whatever a run throws ends the process with status 1, logged, instead of std::terminate.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& error) {
        spdlog::error("event=fatal error=\"{}\"", error.what());
    } catch (...) {
        spdlog::error("event=fatal error=\"unknown exception\"");
    }
    return 1;
}
