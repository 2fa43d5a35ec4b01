#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include "outboxd/config/config.hpp"

using namespace outboxd::config;
using Catch::Contains;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Sets and unsets environment variables for one test and restores them all afterwards, so
// neither the caller's OUTBOXD_* variables nor one test's leak into another.
class ScopedEnv {
public:
    ScopedEnv() {
        for (const auto& name : env_names()) unset(name);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
    ~ScopedEnv() {
        for (const auto& [name, value] : saved_) {
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
    }

    void set(const std::string& name, const std::string& value) {
        save(name);
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    void unset(const std::string& name) {
        save(name);
        ::unsetenv(name.c_str());
    }

private:
    void save(const std::string& name) {
        if (saved_.count(name) != 0) return;
        const char* value = std::getenv(name.c_str());
        saved_[name] = value ? std::optional<std::string>{value} : std::nullopt;
    }

    std::map<std::string, std::optional<std::string>> saved_;
};

// Parses `args` (without the program name) the way main() would, then resolves.
Config resolve_args(std::vector<std::string> args) {
    CLI::App app{"outboxd test"};
    Options options;
    options.bind(app);
    // CLI11 2.1's parse(std::vector<std::string>&) expects argv reversed, last argument first.
    std::reverse(args.begin(), args.end());
    app.parse(args);
    return options.resolve();
}

std::string env_of(const std::string& flag) {
    std::string env = "OUTBOXD_" + flag.substr(2);
    for (char& c : env) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
    return env;
}

std::string label_of(const std::string& flag) { return flag + " (" + env_of(flag) + ")"; }

// A config that validate() accepts: the defaults plus the two derived fields.
Config valid_config() {
    Config config;
    config.node_id = "node-1";
    config.advertise_url = "ws://127.0.0.1:8080/v1/workers";
    return config;
}

const std::vector<std::string> kExpectedFlags{"--database-url",
                                              "--databases",
                                              "--control-database",
                                              "--listen",
                                              "--node-id",
                                              "--advertise-url",
                                              "--worker-token",
                                              "--admin-token",
                                              "--jwt-keys-file",
                                              "--jwt-issuer",
                                              "--jwt-audience",
                                              "--jwt-clock-skew-ms",
                                              "--poll-interval-ms",
                                              "--claim-lookback-ms",
                                              "--batch-size",
                                              "--max-attempts",
                                              "--backoff-base-ms",
                                              "--backoff-multiplier",
                                              "--backoff-max-ms",
                                              "--task-timeout-ms",
                                              "--lease-ttl-ms",
                                              "--default-max-in-flight",
                                              "--retention-s",
                                              "--log-level",
                                              "--max-frame-bytes",
                                              "--max-result-bytes",
                                              "--max-body-bytes",
                                              "--drain-timeout-ms",
                                              "--quota-cache-ttl-ms",
                                              "--migrate",
                                              "--metrics-private",
                                              "--max-write-queue",
                                              "--max-write-queue-bytes",
                                              "--max-connections",
                                              "--http-idle-timeout-ms",
                                              "--tls-cert-file",
                                              "--tls-key-file",
                                              "--http-allowed-hosts",
                                              "--http-max-response-bytes",
                                              "--api-statement-timeout-ms",
                                              "--secrets-key",
                                              "--database-url-file",
                                              "--databases-file",
                                              "--worker-token-file",
                                              "--admin-token-file",
                                              "--secrets-key-file"};

// A directory of its own for the files a test writes, removed with it.
class TempDir {
public:
    TempDir() {
        std::string pattern = "/tmp/outboxd-config-test.XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }

    [[nodiscard]] const std::string& path() const { return path_; }
    // Writes `content` to the file `name` in the directory; returns its path.
    [[nodiscard]] std::string file(const std::string& name, const std::string& content) const {
        auto file = path_ + "/" + name;
        std::ofstream{file, std::ios::binary} << content;
        return file;
    }

private:
    std::string path_;
};

// base64 of the bytes 0..31: a valid AES-256 key.
const std::string kKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

}  // namespace

TEST_CASE("defaults are those the README documents", "[unit][config]") {
    const ScopedEnv env;
    const Config config = resolve_args({});

    CHECK(config.database_url.empty());
    CHECK(config.listen.host == "0.0.0.0");
    CHECK(config.listen.port == 8080);
    CHECK(config.node_id.ends_with("-" + std::to_string(::getpid())));
    CHECK(config.advertise_url == "ws://127.0.0.1:8080/v1/workers");
    CHECK_FALSE(config.worker_token.has_value());
    CHECK_FALSE(config.admin_token.has_value());
    CHECK(config.poll_interval == milliseconds{500});
    CHECK(config.batch_size == 256);
    CHECK(config.max_attempts == 10);
    CHECK(config.backoff_base == milliseconds{1000});
    CHECK(config.backoff_multiplier == 2.0);
    CHECK(config.backoff_max == milliseconds{300000});
    CHECK(config.task_timeout == milliseconds{30000});
    CHECK(config.lease_ttl == milliseconds{5000});
    CHECK(config.default_max_in_flight == 10000);
    CHECK(config.retention == seconds{86400});
    CHECK(config.log_level == "info");
    CHECK(config.max_frame_bytes == 1u << 20);
    CHECK(config.max_result_bytes == std::size_t{64} * 1024);
    CHECK(config.max_body_bytes == 8u << 20);
    CHECK(config.drain_timeout == milliseconds{30000});
    CHECK(config.quota_cache_ttl == milliseconds{1000});
    CHECK(config.migrate_on_start);
    CHECK(config.max_write_queue == 4096);
}

TEST_CASE("every setting is read from its environment variable", "[unit][config]") {
    ScopedEnv env;
    env.set("OUTBOXD_DATABASE_URL", "postgresql://u@127.0.0.1:5432/db");
    env.set("OUTBOXD_LISTEN", "127.0.0.1:9001");
    env.set("OUTBOXD_NODE_ID", "node-a");
    env.set("OUTBOXD_ADVERTISE_URL", "wss://a.example:443/v1/workers");
    env.set("OUTBOXD_WORKER_TOKEN", "wt");
    env.set("OUTBOXD_ADMIN_TOKEN", "at");
    env.set("OUTBOXD_POLL_INTERVAL_MS", "250");
    env.set("OUTBOXD_CLAIM_LOOKBACK_MS", "0");
    env.set("OUTBOXD_BATCH_SIZE", "64");
    env.set("OUTBOXD_MAX_ATTEMPTS", "3");
    env.set("OUTBOXD_BACKOFF_BASE_MS", "100");
    env.set("OUTBOXD_BACKOFF_MULTIPLIER", "1.5");
    env.set("OUTBOXD_BACKOFF_MAX_MS", "2000");
    env.set("OUTBOXD_TASK_TIMEOUT_MS", "1500");
    env.set("OUTBOXD_LEASE_TTL_MS", "900");
    env.set("OUTBOXD_DEFAULT_MAX_IN_FLIGHT", "77");
    env.set("OUTBOXD_RETENTION_S", "60");
    env.set("OUTBOXD_LOG_LEVEL", "debug");
    env.set("OUTBOXD_MAX_FRAME_BYTES", "4096");
    env.set("OUTBOXD_MAX_RESULT_BYTES", "2048");
    env.set("OUTBOXD_MAX_BODY_BYTES", "8192");
    env.set("OUTBOXD_DRAIN_TIMEOUT_MS", "0");
    env.set("OUTBOXD_QUOTA_CACHE_TTL_MS", "0");
    env.set("OUTBOXD_MIGRATE", "no");
    env.set("OUTBOXD_MAX_WRITE_QUEUE", "16");

    const Config config = resolve_args({});

    CHECK(config.database_url == "postgresql://u@127.0.0.1:5432/db");
    CHECK(config.listen.host == "127.0.0.1");
    CHECK(config.listen.port == 9001);
    CHECK(config.node_id == "node-a");
    CHECK(config.advertise_url == "wss://a.example:443/v1/workers");
    CHECK(config.worker_token == "wt");
    CHECK(config.admin_token == "at");
    CHECK(config.poll_interval == milliseconds{250});
    CHECK(config.claim_lookback == milliseconds{0});
    CHECK(config.batch_size == 64);
    CHECK(config.max_attempts == 3);
    CHECK(config.backoff_base == milliseconds{100});
    CHECK(config.backoff_multiplier == 1.5);
    CHECK(config.backoff_max == milliseconds{2000});
    CHECK(config.task_timeout == milliseconds{1500});
    CHECK(config.lease_ttl == milliseconds{900});
    CHECK(config.default_max_in_flight == 77);
    CHECK(config.retention == seconds{60});
    CHECK(config.log_level == "debug");
    CHECK(config.max_frame_bytes == 4096);
    CHECK(config.max_result_bytes == 2048);
    CHECK(config.max_body_bytes == 8192);
    CHECK(config.drain_timeout == milliseconds{0});
    CHECK(config.quota_cache_ttl == milliseconds{0});
    CHECK_FALSE(config.migrate_on_start);
    CHECK(config.max_write_queue == 16);
}

TEST_CASE("a flag beats its environment variable", "[unit][config]") {
    ScopedEnv env;
    env.set("OUTBOXD_BATCH_SIZE", "64");
    env.set("OUTBOXD_LISTEN", "127.0.0.1:9001");
    env.set("OUTBOXD_WORKER_TOKEN", "from-env");

    const Config config =
        resolve_args({"--batch-size", "32", "--listen=127.0.0.1:9002", "--worker-token", "cli"});

    CHECK(config.batch_size == 32);
    CHECK(config.listen.port == 9002);
    CHECK(config.worker_token == "cli");
}

TEST_CASE("a flag also hides a bad environment value", "[unit][config]") {
    ScopedEnv env;
    env.set("OUTBOXD_BATCH_SIZE", "abc");
    env.set("OUTBOXD_WORKER_TOKEN", "");
    CHECK(resolve_args({"--batch-size", "8", "--worker-token", "t"}).batch_size == 8);
}

TEST_CASE("a repeated flag takes its last value", "[unit][config]") {
    const ScopedEnv env;
    CHECK(resolve_args({"--batch-size", "8", "--batch-size", "9"}).batch_size == 9);
}

TEST_CASE("a conversion error names flag, variable and value", "[unit][config]") {
    const ScopedEnv env;
    CHECK_THROWS_AS(resolve_args({"--batch-size", "abc"}), ConfigError);
    CHECK_THROWS_WITH(resolve_args({"--batch-size", "abc"}),
                      "--batch-size (OUTBOXD_BATCH_SIZE): must be an integer between 1 and "
                      "100000, got 'abc'");
}

TEST_CASE("every bad value is refused naming its setting", "[unit][config]") {
    struct Bad {
        std::string flag;
        std::string value;
    };
    const std::vector<Bad> cases{
        {"--listen", "garbage"},
        {"--listen", "host:99999"},
        {"--listen", "::1:8080"},
        {"--listen", "host:"},
        {"--listen", "[::1]8080"},
        {"--listen", "host:-1"},
        {"--listen", "host name:80"},
        {"--node-id", "has space"},
        {"--node-id", "a/b"},
        {"--node-id", std::string(129, 'n')},
        {"--advertise-url", "http://node:8080/v1/workers"},
        {"--advertise-url", "ws://"},
        {"--poll-interval-ms", "0"},
        {"--poll-interval-ms", "3600001"},
        {"--poll-interval-ms", "5ms"},
        {"--poll-interval-ms", "1.5"},
        {"--claim-lookback-ms", "-1"},
        {"--claim-lookback-ms", "3600001"},
        {"--batch-size", "0"},
        {"--batch-size", "100001"},
        {"--batch-size", "-1"},
        {"--batch-size", " 5"},
        {"--batch-size", "99999999999999999999"},
        {"--max-attempts", "0"},
        {"--max-attempts", "1001"},
        {"--backoff-base-ms", "0"},
        {"--backoff-base-ms", "86400001"},
        {"--backoff-multiplier", "0.5"},
        {"--backoff-multiplier", "100.5"},
        {"--backoff-multiplier", "nan"},
        {"--backoff-multiplier", "inf"},
        {"--backoff-multiplier", "two"},
        {"--backoff-max-ms", "0"},
        {"--backoff-max-ms", "999"},  // below the default base of 1000
        {"--task-timeout-ms", "9"},
        {"--task-timeout-ms", "86400001"},
        {"--lease-ttl-ms", "199"},
        {"--lease-ttl-ms", "600001"},
        {"--default-max-in-flight", "0"},
        {"--default-max-in-flight", "10000001"},
        {"--retention-s", "0"},
        {"--retention-s", "31536001"},
        {"--log-level", "verbose"},
        {"--log-level", "trace"},
        {"--max-frame-bytes", "1023"},
        {"--max-frame-bytes", "67108865"},
        {"--max-body-bytes", "1023"},
        {"--max-body-bytes", "268435457"},
        {"--drain-timeout-ms", "-1"},
        {"--drain-timeout-ms", "3600001"},
        {"--quota-cache-ttl-ms", "-1"},
        {"--quota-cache-ttl-ms", "600001"},
        {"--migrate", "maybe"},
        {"--migrate", "2"},
        {"--max-write-queue", "0"},
        {"--max-write-queue", "1000001"},
    };
    for (const auto& bad : cases) {
        INFO(bad.flag << " = '" << bad.value << "'");
        {
            const ScopedEnv env;
            CHECK_THROWS_AS(resolve_args({bad.flag + "=" + bad.value}), ConfigError);
            CHECK_THROWS_WITH(resolve_args({bad.flag + "=" + bad.value}),
                              Contains(label_of(bad.flag)));
        }
        {
            ScopedEnv env;
            env.set(env_of(bad.flag), bad.value);
            CHECK_THROWS_WITH(resolve_args({}), Contains(label_of(bad.flag)));
        }
    }
}

TEST_CASE("bounds themselves are accepted", "[unit][config]") {
    const ScopedEnv env;
    const Config low = resolve_args(
        {"--poll-interval-ms=1", "--batch-size=1", "--max-attempts=1", "--backoff-base-ms=1",
         "--backoff-multiplier=1", "--backoff-max-ms=1", "--task-timeout-ms=10",
         "--lease-ttl-ms=200", "--default-max-in-flight=1", "--retention-s=1",
         "--max-frame-bytes=1024", "--max-body-bytes=1024", "--drain-timeout-ms=0",
         "--quota-cache-ttl-ms=0", "--max-write-queue=1", "--listen=:0"});
    CHECK(low.batch_size == 1);
    CHECK(low.listen.port == 0);
    CHECK(low.backoff_max == low.backoff_base);

    const Config high = resolve_args(
        {"--poll-interval-ms=3600000", "--batch-size=100000", "--max-attempts=1000",
         "--backoff-base-ms=86400000", "--backoff-multiplier=100", "--backoff-max-ms=86400000",
         "--task-timeout-ms=86400000", "--lease-ttl-ms=600000", "--default-max-in-flight=10000000",
         "--retention-s=31536000", "--max-frame-bytes=67108864", "--max-body-bytes=268435456",
         "--drain-timeout-ms=3600000", "--quota-cache-ttl-ms=600000", "--max-write-queue=1000000",
         "--listen=:65535"});
    CHECK(high.max_body_bytes == 268435456u);
    CHECK(high.listen.port == 65535);
}

TEST_CASE("booleans and log levels take the documented spellings", "[unit][config]") {
    const ScopedEnv env;
    for (const std::string yes : {"true", "1", "yes", "TRUE", "Yes"}) {
        CHECK(resolve_args({"--migrate", yes}).migrate_on_start);
    }
    for (const std::string no : {"false", "0", "no", "False", "NO"}) {
        CHECK_FALSE(resolve_args({"--migrate", no}).migrate_on_start);
    }
    for (const std::string level : {"debug", "info", "warn", "error"}) {
        CHECK(resolve_args({"--log-level", level}).log_level == level);
    }
    CHECK(resolve_args({"--log-level", "WARN"}).log_level == "warn");
}

TEST_CASE("a token set but empty is refused, never taken as open", "[unit][config]") {
    SECTION("empty variable") {
        ScopedEnv env;
        env.set("OUTBOXD_WORKER_TOKEN", "");
        CHECK_THROWS_AS(resolve_args({}), ConfigError);
        CHECK_THROWS_WITH(resolve_args({}), Contains("OUTBOXD_WORKER_TOKEN is set but empty"));
    }
    SECTION("empty admin variable") {
        ScopedEnv env;
        env.set("OUTBOXD_ADMIN_TOKEN", "");
        CHECK_THROWS_WITH(resolve_args({}), Contains("OUTBOXD_ADMIN_TOKEN is set but empty"));
    }
    SECTION("empty flag") {
        const ScopedEnv env;
        CHECK_THROWS_WITH(resolve_args({"--worker-token", ""}),
                          "--worker-token (OUTBOXD_WORKER_TOKEN): must not be empty");
        CHECK_THROWS_WITH(resolve_args({"--admin-token", ""}),
                          Contains("--admin-token (OUTBOXD_ADMIN_TOKEN)"));
        // CLI11 itself refuses "--flag=" with no value, naming the flag.
        CHECK_THROWS_AS(resolve_args({"--worker-token="}), CLI::ParseError);
        CHECK_THROWS_WITH(resolve_args({"--worker-token="}), Contains("--worker-token"));
    }
    SECTION("validate refuses an assembled empty token") {
        Config config = valid_config();
        config.admin_token = "";
        CHECK_THROWS_WITH(validate(config), Contains("--admin-token (OUTBOXD_ADMIN_TOKEN)"));
    }
}

TEST_CASE("an empty number is refused; an empty URL or id means the default", "[unit][config]") {
    {
        ScopedEnv env;
        env.set("OUTBOXD_BATCH_SIZE", "");
        CHECK_THROWS_WITH(resolve_args({}), Contains("OUTBOXD_BATCH_SIZE is set but empty"));
    }
    {
        const ScopedEnv env;
        CHECK_THROWS_WITH(resolve_args({"--batch-size", ""}),
                          Contains("--batch-size (OUTBOXD_BATCH_SIZE)"));
    }
    {
        ScopedEnv env;
        env.set("OUTBOXD_DATABASE_URL", "");
        env.set("OUTBOXD_NODE_ID", "");
        env.set("OUTBOXD_ADVERTISE_URL", "");
        const Config config = resolve_args({"--node-id", ""});
        CHECK(config.database_url.empty());
        CHECK_FALSE(config.node_id.empty());
        CHECK(config.advertise_url == "ws://127.0.0.1:8080/v1/workers");
    }
}

TEST_CASE("listen addresses: host:port, [v6]:port and :port", "[unit][config]") {
    const std::string setting = "--listen (OUTBOXD_LISTEN)";

    auto address = parse_listen("127.0.0.1:9000", setting);
    CHECK(address.host == "127.0.0.1");
    CHECK(address.port == 9000);

    address = parse_listen("node-1.example:80", setting);
    CHECK(address.host == "node-1.example");
    CHECK(address.port == 80);

    address = parse_listen("[::1]:8080", setting);
    CHECK(address.host == "::1");
    CHECK(address.port == 8080);

    address = parse_listen("[::]:0", setting);
    CHECK(address.host == "::");
    CHECK(address.port == 0);

    address = parse_listen(":7000", setting);
    CHECK(address.host == "0.0.0.0");
    CHECK(address.port == 7000);

    CHECK(parse_listen("h:65535", setting).port == 65535);

    for (const std::string bad :
         {"", "8080", ":", "h:65536", "h:80x", "h:+80", "h: 80", "::1:80", "[::1]",
          "[::1]:", "[]:80", "[::1:80", "[::1]x80", "h/x:80", "h:99999999999999999999"}) {
        INFO("'" << bad << "'");
        CHECK_THROWS_AS(parse_listen(bad, setting), ConfigError);
        CHECK_THROWS_WITH(parse_listen(bad, setting), Contains(setting));
    }
}

TEST_CASE("derived defaults: node id and advertised URL", "[unit][config]") {
    const ScopedEnv env;

    const Config plain = resolve_args({});
    const std::string& id = plain.node_id;
    CHECK(id.size() <= 128);
    CHECK(std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    }));

    CHECK(resolve_args({"--listen", "10.1.2.3:9000"}).advertise_url ==
          "ws://10.1.2.3:9000/v1/workers");
    CHECK(resolve_args({"--listen", "0.0.0.0:9000"}).advertise_url ==
          "ws://127.0.0.1:9000/v1/workers");
    CHECK(resolve_args({"--listen", "[::]:9000"}).advertise_url ==
          "ws://127.0.0.1:9000/v1/workers");
    CHECK(resolve_args({"--listen", "[::1]:9000"}).advertise_url == "ws://[::1]:9000/v1/workers");

    const Config given = resolve_args(
        {"--listen", ":9000", "--node-id", "n.1_x-y", "--advertise-url", "ws://lb:80/v1/workers"});
    CHECK(given.node_id == "n.1_x-y");
    CHECK(given.advertise_url == "ws://lb:80/v1/workers");
}

TEST_CASE("validate checks an assembled config", "[unit][config]") {
    CHECK_NOTHROW(validate(valid_config()));

    Config config = valid_config();
    config.backoff_base = milliseconds{5000};
    config.backoff_max = milliseconds{4000};
    CHECK_THROWS_AS(validate(config), ConfigError);
    CHECK_THROWS_WITH(validate(config), Contains("--backoff-max-ms (OUTBOXD_BACKOFF_MAX_MS)") &&
                                            Contains("--backoff-base-ms"));

    config = valid_config();
    config.backoff_multiplier = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(validate(config), Contains("--backoff-multiplier"));

    config = valid_config();
    config.node_id.clear();
    CHECK_THROWS_WITH(validate(config), Contains("--node-id (OUTBOXD_NODE_ID)"));

    config = valid_config();
    config.max_frame_bytes = std::numeric_limits<std::size_t>::max();
    CHECK_THROWS_WITH(validate(config), Contains("--max-frame-bytes"));

    config = valid_config();
    config.log_level = "loud";
    CHECK_THROWS_WITH(validate(config), Contains("--log-level"));

    config = valid_config();
    config.lease_ttl = milliseconds{10};
    CHECK_THROWS_WITH(validate(config), Contains("--lease-ttl-ms"));
}

TEST_CASE("flag_names and env_names list every setting, pairwise", "[unit][config]") {
    const auto flags = flag_names();
    const auto envs = env_names();
    REQUIRE(flags.size() == kExpectedFlags.size());
    REQUIRE(envs.size() == flags.size());
    CHECK(std::set<std::string>(flags.begin(), flags.end()) ==
          std::set<std::string>(kExpectedFlags.begin(), kExpectedFlags.end()));
    for (std::size_t i = 0; i < flags.size(); ++i) CHECK(envs[i] == env_of(flags[i]));
    CHECK(std::set<std::string>(envs.begin(), envs.end()).size() == envs.size());
}

TEST_CASE("bind adds every flag with its variable and its default in --help", "[unit][config]") {
    CLI::App app{"outboxd test"};
    Options options;
    options.bind(app);
    for (const auto& flag : flag_names()) {
        INFO(flag);
        const CLI::Option* option = app.get_option(flag);
        REQUIRE(option != nullptr);
        CHECK(option->get_envname() == env_of(flag));
    }
    const std::string help = app.help();
    CHECK_THAT(help, Contains("--batch-size") && Contains("OUTBOXD_BATCH_SIZE") &&
                         Contains("default: 256") && Contains("1..100000"));
}

TEST_CASE("TLS files come in pairs, must be readable, and keep the advertised URL on wss://",
          "[unit][config]") {
    const ScopedEnv env;
    const std::string file = "/proc/self/cmdline";  // readable everywhere
    CHECK_THROWS_WITH(resolve_args({"--tls-cert-file", file}), Contains("--tls-key-file"));
    CHECK_THROWS_WITH(resolve_args({"--tls-key-file", file}), Contains("--tls-cert-file"));
    CHECK_THROWS_WITH(
        resolve_args({"--tls-cert-file", "/nonexistent/cert.pem", "--tls-key-file", file}),
        Contains("cannot read '/nonexistent/cert.pem'"));
    const auto tls = resolve_args(
        {"--tls-cert-file", file, "--tls-key-file", file, "--listen", "10.0.0.1:8443"});
    CHECK(tls.advertise_url == "wss://10.0.0.1:8443/v1/workers");
    CHECK_THROWS_WITH(resolve_args({"--tls-cert-file", file, "--tls-key-file", file,
                                    "--advertise-url", "ws://10.0.0.1:8443/v1/workers"}),
                      Contains("must be a wss:// URL when TLS is on"));
}

TEST_CASE("a secret setting is read from the file its _FILE twin names", "[unit][config]") {
    const TempDir dir;
    ScopedEnv env;
    env.set("OUTBOXD_ADMIN_TOKEN_FILE", dir.file("admin", "admin-t0ken\n"));
    env.set("OUTBOXD_DATABASE_URL_FILE", dir.file("url", "postgresql://u:pw@db/outboxd\r\n"));
    env.set("OUTBOXD_SECRETS_KEY_FILE", dir.file("keys", "k2:" + kKey + "\n\n"));
    const auto config = resolve_args({"--worker-token-file", dir.file("worker", "w0rker")});
    // The trailing line breaks an editor or `echo` adds are trimmed; nothing else is.
    CHECK(config.admin_token == "admin-t0ken");
    CHECK(config.database_url == "postgresql://u:pw@db/outboxd");
    CHECK(config.secrets_key == "k2:" + kKey);
    CHECK(config.worker_token == "w0rker");
    CHECK(resolve_args({"--admin-token-file", dir.file("spaced", " t \n")}).admin_token == " t ");
}

TEST_CASE("a secret and its file twin together are refused", "[unit][config]") {
    const TempDir dir;
    const auto token = dir.file("token", "t");
    {
        ScopedEnv env;
        env.set("OUTBOXD_ADMIN_TOKEN", "direct");
        env.set("OUTBOXD_ADMIN_TOKEN_FILE", token);
        CHECK_THROWS_AS(resolve_args({}), ConfigError);
        CHECK_THROWS_WITH(resolve_args({}),
                          Contains("--admin-token (OUTBOXD_ADMIN_TOKEN)") &&
                              Contains("--admin-token-file (OUTBOXD_ADMIN_TOKEN_FILE)") &&
                              Contains("both set"));
    }
    {
        ScopedEnv env;
        env.set("OUTBOXD_WORKER_TOKEN_FILE", token);
        CHECK_THROWS_WITH(resolve_args({"--worker-token", "t"}), Contains("both set"));
        // Even set but empty, the variable counts as set.
        env.unset("OUTBOXD_WORKER_TOKEN_FILE");
        env.set("OUTBOXD_WORKER_TOKEN", "");
        CHECK_THROWS_WITH(resolve_args({"--worker-token-file", token}), Contains("both set"));
    }
    {
        const ScopedEnv env;
        CHECK_THROWS_WITH(
            resolve_args({"--database-url", "postgresql://x", "--database-url-file", token}),
            Contains("--database-url-file (OUTBOXD_DATABASE_URL_FILE)") && Contains("both set"));
        CHECK_THROWS_WITH(
            resolve_args({"--secrets-key", "k1:" + kKey, "--secrets-key-file", token}),
            Contains("both set"));
    }
}

TEST_CASE("an unusable secret file is refused naming the setting and the path, not the content",
          "[unit][config]") {
    const TempDir dir;
    const ScopedEnv env;
    CHECK_THROWS_WITH(resolve_args({"--admin-token-file", dir.path() + "/missing"}),
                      Contains("--admin-token-file (OUTBOXD_ADMIN_TOKEN_FILE): cannot read '" +
                               dir.path() + "/missing'") &&
                          Contains("No such file"));
    CHECK_THROWS_WITH(resolve_args({"--worker-token-file", dir.path()}),
                      Contains("--worker-token-file") && Contains("is a directory"));
    CHECK_THROWS_WITH(resolve_args({"--admin-token-file", dir.file("empty", "\n")}),
                      Contains("--admin-token-file") && Contains("is empty"));
    CHECK_THROWS_WITH(
        resolve_args({"--admin-token-file", dir.file("big", std::string(70000, 'x'))}),
        Contains("is larger than 65536 bytes"));
    // A key file of the wrong shape: the complaint names the setting, not what the file holds.
    try {
        (void)resolve_args({"--secrets-key-file", dir.file("bad-key", "k1:c2VjcmV0LWJ5dGVz\n")});
        FAIL("a bad key was taken");
    } catch (const ConfigError& error) {
        const std::string what = error.what();
        CHECK_THAT(what, Contains("--secrets-key (OUTBOXD_SECRETS_KEY)") &&
                             Contains("12 bytes; AES-256 takes 32"));
        CHECK(what.find("c2VjcmV0") == std::string::npos);
    }
    {
        ScopedEnv empty;
        empty.set("OUTBOXD_SECRETS_KEY_FILE", "");
        CHECK_THROWS_WITH(resolve_args({}), Contains("OUTBOXD_SECRETS_KEY_FILE is set but empty"));
    }
}

TEST_CASE("the secrets key list is checked at start and never quoted", "[unit][config]") {
    ScopedEnv env;
    CHECK_FALSE(resolve_args({}).secrets_key.has_value());
    CHECK(resolve_args({"--secrets-key", "new:" + kKey + ",old:" + kKey}).secrets_key);
    const std::vector<std::string> bad_lists{"k1", kKey, "k1:" + kKey + ",k1:" + kKey,
                                             "k 1:" + kKey, "k1:" + kKey.substr(4)};
    for (const auto& bad : bad_lists) {
        INFO(bad);
        try {
            (void)resolve_args({"--secrets-key", bad});
            FAIL("taken");
        } catch (const ConfigError& error) {
            const std::string what = error.what();
            CHECK_THAT(what, Contains("--secrets-key (OUTBOXD_SECRETS_KEY)"));
            CHECK(what.find(kKey.substr(4, 16)) == std::string::npos);
        }
    }
    env.set("OUTBOXD_SECRETS_KEY", "");
    CHECK_THROWS_WITH(resolve_args({}), Contains("OUTBOXD_SECRETS_KEY is set but empty"));
}

TEST_CASE("OUTBOXD_DATABASES names the databases, in order, and refuses what it cannot use",
          "[unit][config]") {
    ScopedEnv env;
    SECTION("strings and objects, in the order given") {
        env.set(
            "OUTBOXD_DATABASES",
            R"({"orders":"postgresql://u:pw@db1/orders","billing":"host=db1 dbname=billing",)"
            R"("shipping":{"url":"postgresql://pool/shipping","listen_url":"postgresql://db2/shipping"}})");
        const auto config = resolve_args({});
        const auto served = served_databases(config);
        REQUIRE(served.size() == 3);
        CHECK(served[0] == Database{"orders", "postgresql://u:pw@db1/orders", ""});
        CHECK(served[1] == Database{"billing", "host=db1 dbname=billing", ""});
        CHECK(served[2] ==
              Database{"shipping", "postgresql://pool/shipping", "postgresql://db2/shipping"});
        CHECK(control_database(served, config).name == "orders");
    }
    SECTION("OUTBOXD_DATABASE_URL alone is one database named default") {
        env.set("OUTBOXD_DATABASE_URL", "postgresql://db/outboxd");
        const auto served = served_databases(resolve_args({}));
        REQUIRE(served.size() == 1);
        CHECK(served[0] == Database{"default", "postgresql://db/outboxd", ""});
    }
    SECTION("the control database may be any of them") {
        env.set("OUTBOXD_DATABASES", R"({"a":"host=a","b":"host=b"})");
        env.set("OUTBOXD_CONTROL_DATABASE", "b");
        const auto config = resolve_args({});
        CHECK(control_database(served_databases(config), config).name == "b");
    }
    SECTION("read from OUTBOXD_DATABASES_FILE") {
        TempDir dir;
        env.set("OUTBOXD_DATABASES_FILE", dir.file("dbs.json", R"({"a":"host=a"})"
                                                               "\n"));
        CHECK(served_databases(resolve_args({})).front() == Database{"a", "host=a", ""});
    }
    const std::string secret = "s3cr3t-password";
    const std::vector<std::pair<std::string, std::string>> refusals{
        {R"({"Orders":"host=a"})", "must match [a-z0-9_-]{1,32}, got 'Orders'"},
        {R"({"":"host=a"})", "must match [a-z0-9_-]{1,32}"},
        {R"({"a23456789012345678901234567890123":"host=a"})", "must match"},
        {R"({"a":"host=a","a":"host=b"})", "names database 'a' twice"},
        {R"({})", "at least one database"},
        {R"(["host=a"])", "must be a JSON object"},
        {R"({"a":""})", "\"a\".url must not be empty"},
        {R"({"a":42})", "\"a\" must be a connection string or an object"},
        {R"({"a":{"listen_url":"host=a"}})", "\"a\" needs a \"url\""},
        {R"({"a":{"url":"host=a","pool":1}})", "unknown key 'pool'"},
        {R"({"a":{"url":7}})", "\"a\".url must be a string"},
        {R"({"a":"host=a","b":"host=a"})", "\"b\" has the same url as an earlier database"},
        {R"({"a":"postgresql://u:s3cr3t-password@h/x")", "is not valid JSON"},
    };
    for (const auto& [text, expected] : refusals) {
        DYNAMIC_SECTION("refused: " << text) {
            env.set("OUTBOXD_DATABASES", text);
            try {
                (void)resolve_args({});
                FAIL("accepted");
            } catch (const ConfigError& error) {
                const std::string message = error.what();
                CHECK_THAT(message,
                           Contains("--databases (OUTBOXD_DATABASES)") && Contains(expected));
                // A URL may hold a password: never quoted.
                CHECK(message.find(secret) == std::string::npos);
            }
        }
    }
    SECTION("not with OUTBOXD_DATABASE_URL") {
        env.set("OUTBOXD_DATABASES", R"({"a":"host=a"})");
        env.set("OUTBOXD_DATABASE_URL", "host=b");
        CHECK_THROWS_WITH(resolve_args({}),
                          Contains("both set") && Contains("OUTBOXD_DATABASE_URL"));
    }
    SECTION("a control database that is not served") {
        env.set("OUTBOXD_DATABASES", R"({"a":"host=a"})");
        env.set("OUTBOXD_CONTROL_DATABASE", "b");
        CHECK_THROWS_WITH(resolve_args({}),
                          Contains("--control-database") && Contains("names 'b', which is not in"));
    }
}

TEST_CASE("hostile OUTBOXD_DATABASES values are refused naming the setting, never echoed",
          "[unit][config]") {
    ScopedEnv env;
    const std::string nested = std::string(10000, '[') + std::string(10000, ']');
    const std::string huge_name(1 << 20, 'a');
    const std::vector<std::pair<std::string, std::string>> refusals{
        {std::string{R"({"a":"host=a)"} + '\0' + R"(b"})", "not valid JSON"},
        {R"({"a":"host=a\u0000b"})", "must not hold a NUL byte"},
        {"{\"a\":\"host=\xff\xfe\"}", "not valid JSON"},
        {R"({"a":123456789012345678901234567890})", "must be a connection string or an object"},
        {"{\"" + huge_name + "\":\"host=a\"}", "must match [a-z0-9_-]{1,32}"},
        {nested, "must be a JSON object"},
        {R"({"a":)" + nested + "}", "must be a connection string or an object"},
    };
    for (const auto& [text, expected] : refusals) {
        DYNAMIC_SECTION("refused: " << text.substr(0, 40)) {
            env.set("OUTBOXD_DATABASES", text);
            try {
                (void)resolve_args({});
                FAIL("accepted");
            } catch (const ConfigError& error) {
                const std::string message = error.what();
                CHECK_THAT(message,
                           Contains("--databases (OUTBOXD_DATABASES)") && Contains(expected));
                CHECK(message.size() < 300);  // a 1 MB value is not echoed back
            }
        }
    }
}
