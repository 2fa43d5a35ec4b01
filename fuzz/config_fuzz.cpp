// Node configuration: command-line flags and OUTBOXD_* environment variables, bound and
// resolved exactly as outboxd's main() does.
//
// Input: one item per line. A line "OUTBOXD_NAME=value" sets that environment variable;
// any other line is one argv token (so "--batch-size=5", or "--batch-size" then "5").
//
// Oracles beyond "no crash, no sanitizer report":
//  - parsing throws nothing but CLI11's ParseError, resolving nothing but ConfigError, and a
//    ConfigError names the setting (its OUTBOXD_* variable);
//  - a resolved Config passes validate() again, and given back as flags alone it resolves to
//    the same Config (a setting means the same from a flag as from a variable).

#include <stdlib.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "fuzz_check.hpp"
#include "outboxd/config/config.hpp"

namespace {

namespace config = outboxd::config;
using outboxd::fuzz::broken;
using outboxd::fuzz::require;

constexpr std::string_view kEnvPrefix = "OUTBOXD_";

struct Invocation {
    std::vector<std::string> args{"outboxd"};
    std::vector<std::pair<std::string, std::string>> env;
};

Invocation split(std::string_view input) {
    Invocation out;
    while (!input.empty()) {
        const auto end = input.find('\n');
        const auto line = input.substr(0, end);
        const auto equals = line.find('=');
        if (line.starts_with(kEnvPrefix) && equals != std::string_view::npos) {
            out.env.emplace_back(line.substr(0, equals), line.substr(equals + 1));
        } else {
            out.args.emplace_back(line);
        }
        if (end == std::string_view::npos) break;
        input.remove_prefix(end + 1);
    }
    return out;
}

// Sets the invocation's variables for one resolve and clears them (and every OUTBOXD_*
// setting) afterwards, so that no input sees another's environment.
class Environment {
public:
    explicit Environment(const std::vector<std::pair<std::string, std::string>>& env) {
        clear();
        for (const auto& [name, value] : env) {
            // setenv stops at a NUL byte, as a real environment would.
            if (::setenv(name.c_str(), value.c_str(), 1) == 0) names_.push_back(name);
        }
    }
    Environment(const Environment&) = delete;
    Environment& operator=(const Environment&) = delete;
    ~Environment() {
        for (const auto& name : names_) ::unsetenv(name.c_str());
    }

    static void clear() {
        for (const auto& name : config::env_names()) ::unsetenv(name.c_str());
    }

private:
    std::vector<std::string> names_;
};

// The outcome of one start: a Config, or nothing when the flags or the settings are refused.
std::optional<config::Config> resolve(const std::vector<std::string>& args) {
    CLI::App app{"outboxd"};
    app.set_help_all_flag("--help-all", "Show help for every subcommand");
    config::Options options;
    options.bind(app);
    app.add_subcommand("serve", "Run a node")->fallthrough();
    app.add_subcommand("migrate", "Apply migrations and exit")->fallthrough();
    app.require_subcommand(0, 1);
    std::vector<const char*> argv;
    argv.reserve(args.size());
    for (const auto& arg : args) argv.push_back(arg.c_str());
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError&) {
        return std::nullopt;
    } catch (const std::exception& error) {
        broken("parsing flags throws nothing but CLI::ParseError", error.what());
    }
    try {
        return options.resolve();
    } catch (const config::ConfigError& error) {
        require(std::string_view{error.what()}.find(kEnvPrefix) != std::string_view::npos,
                "a ConfigError names the setting", error.what());
        return std::nullopt;
    } catch (const std::exception& error) {
        broken("resolving settings throws nothing but ConfigError", error.what());
    }
}

bool is_host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

std::string listen_text(const config::ListenAddress& listen) {
    bool plain = true;
    for (const char c : listen.host) plain = plain && is_host_char(c);
    const auto host = plain ? listen.host : "[" + listen.host + "]";
    return host + ":" + std::to_string(listen.port);
}

std::string number_text(double value) {
    char buffer[64];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc{} ? std::string(buffer, end) : std::string{};
}

// Every setting of `c` as the flag that sets it to that value.
std::vector<std::string> as_flags(const config::Config& c) {
    std::vector<std::string> flags{"outboxd"};
    const auto add = [&flags](std::string_view flag, const std::string& value) {
        flags.push_back("--" + std::string{flag} + "=" + value);
    };
    const auto add_number = [&add](std::string_view flag, auto value) {
        add(flag, std::to_string(value));
    };
    if (!c.database_url.empty()) add("database-url", c.database_url);
    add("listen", listen_text(c.listen));
    add("node-id", c.node_id);
    add("advertise-url", c.advertise_url);
    if (c.worker_token) add("worker-token", *c.worker_token);
    if (c.admin_token) add("admin-token", *c.admin_token);
    add_number("poll-interval-ms", c.poll_interval.count());
    add_number("claim-lookback-ms", c.claim_lookback.count());
    add_number("batch-size", c.batch_size);
    add_number("max-attempts", c.max_attempts);
    add_number("backoff-base-ms", c.backoff_base.count());
    add("backoff-multiplier", number_text(c.backoff_multiplier));
    add_number("backoff-max-ms", c.backoff_max.count());
    add_number("task-timeout-ms", c.task_timeout.count());
    add_number("lease-ttl-ms", c.lease_ttl.count());
    add_number("default-max-in-flight", c.default_max_in_flight);
    add_number("retention-s", c.retention.count());
    add("log-level", c.log_level);
    add_number("max-frame-bytes", c.max_frame_bytes);
    add_number("max-body-bytes", c.max_body_bytes);
    add_number("drain-timeout-ms", c.drain_timeout.count());
    add_number("quota-cache-ttl-ms", c.quota_cache_ttl.count());
    add("migrate", c.migrate_on_start ? "true" : "false");
    add_number("max-write-queue", c.max_write_queue);
    add_number("max-write-queue-bytes", c.max_write_queue_bytes);
    add_number("max-connections", c.max_connections);
    add_number("http-idle-timeout-ms", c.http_idle_timeout.count());
    add_number("api-statement-timeout-ms", c.api_statement_timeout.count());
    if (c.secrets_key) add("secrets-key", *c.secrets_key);
    return flags;
}

std::string joined(const std::vector<std::string>& args) {
    std::string out;
    for (const auto& arg : args) out += arg + " ";
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // The fuzzer's own environment must not decide any input's outcome.
    Environment::clear();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto invocation = split({reinterpret_cast<const char*>(data), size});
    std::optional<config::Config> resolved;
    {
        const Environment env{invocation.env};
        resolved = resolve(invocation.args);
    }
    if (!resolved) return 0;
    try {
        config::validate(*resolved);
    } catch (const std::exception& error) {
        broken("a resolved Config passes validate()", error.what());
    }
    const auto flags = as_flags(*resolved);
    const auto again = resolve(flags);
    if (!again) broken("a resolved Config given back as flags resolves again", joined(flags));
    require(as_flags(*again) == flags, "a resolved Config given back as flags resolves the same",
            joined(flags) + " | became | " + joined(as_flags(*again)));
    return 0;
}
