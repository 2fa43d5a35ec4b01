#include "pg_session.hpp"

#include <cstdlib>
#include <regex>

#include <spdlog/spdlog.h>

#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::store {

PgSession::PgSession(const std::string& database_url, std::vector<Statement> statements,
                     std::vector<std::string> setup)
    : database_url_(with_connection_defaults(database_url)),
      statements_(std::move(statements)),
      setup_(std::move(setup)) {}

namespace {

// A generic plan is kept while the table grows (until its statistics change), so it is made
// of index probes only: no sequential scan (on a table of a hundred rows the planner would
// update the claimed rows by scanning the whole table), no hash or merge join (the outcome
// write's would hash a full scan of the table), no bitmap scan (for a handful of ids it
// cost the claim's backend a third of its CPU, growing and trimming its heap on every
// execution: perf at 1,000 rows/s).
constexpr const char* kGenericPlanning =
    "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;"
    " SET enable_bitmapscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off";
// Back to the planner settings the database and role give (RESET), planned per execution.
constexpr const char* kCustomPlanning =
    "SET plan_cache_mode = force_custom_plan; RESET enable_seqscan; RESET enable_bitmapscan;"
    " RESET enable_hashjoin; RESET enable_mergejoin";

}  // namespace

void PgSession::leave_read_only_server() {
    if (!connection_ || !connection_->is_open()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - role_checked_at_ < kReadOnlyCheckEvery) return;
    role_checked_at_ = now;
    bool read_only = false;
    {
        pqxx::nontransaction check{*connection_};
        read_only = check.exec1(kReadOnlyServerSql)[0].as<bool>();
    }
    if (read_only) {
        spdlog::warn("event=database_read_only server=\"{}\" action=reconnect",
                     util::log_safe(redact_database_url(database_url_)));
        connection_.reset();
    }
}

pqxx::connection& PgSession::connection(Plan plan) {
    leave_read_only_server();
    auto& live = connect();
    if (plan != plan_) {
        // plan_cache_mode is read at every execution, so it applies to statements prepared
        // before. A round trip, but only when the kind of statement changes: a lane runs
        // mostly one kind.
        pqxx::nontransaction session{live};
        session.exec(plan == Plan::generic ? kGenericPlanning : kCustomPlanning);
        plan_ = plan;
    }
    return live;
}

pqxx::connection& PgSession::connect() {
    if (connection_ && connection_->is_open()) return *connection_;
    connection_.reset();
    try {
        auto fresh = std::make_unique<pqxx::connection>(database_url_);
        // libpqxx 6 would otherwise reconnect on its own when a BEGIN finds the connection
        // gone, to a backend without the settings below (and with plan_ stale). A broken
        // connection must surface, so that this session reconnects and sets it up.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        fresh->inhibit_reactivation(true);
#pragma GCC diagnostic pop
        // Plan every execution with its actual parameters unless the statement is
        // Plan::generic: most statements run a few times a second, and a plan fitted to the
        // parameters and the table of the moment is worth its planning.
        // No JIT: once the table is large (history, or bloat under an old snapshot) the
        // planner's cost estimates pass jit_above_cost and every execution of a claim or an
        // outcome write compiled code for tens of milliseconds (17% of the machine in LLVM,
        // measured) to save microseconds.
        {
            pqxx::nontransaction session{*fresh};
            session.exec(kCustomPlanning);
            session.exec("SET jit = off");
            for (const auto& statement : setup_) session.exec(statement);
        }
        // pqxx 6 registers definitions here and prepares each on first use.
        for (const auto& statement : statements_) {
            fresh->prepare(std::string{statement.name}, std::string{statement.sql});
        }
        connection_ = std::move(fresh);
        plan_ = Plan::custom;
        role_checked_at_ = std::chrono::steady_clock::now();
    } catch (const std::exception& error) {
        throw UnavailableError("cannot connect to " + redact_database_url(database_url_) + ": " +
                               error.what());
    }
    return *connection_;
}

void PgSession::rethrow_as_store_error(std::string_view operation) {
    const std::string prefix = std::string{operation} + ": ";
    try {
        throw;
    } catch (const StoreError&) {
        throw;
    } catch (const pqxx::broken_connection& error) {
        connection_.reset();
        throw UnavailableError(prefix + error.what());
    } catch (const pqxx::in_doubt_error& error) {
        connection_.reset();
        throw UnavailableError(prefix + "commit outcome unknown: " + error.what());
    } catch (const pqxx::transaction_rollback& error) {
        throw ConflictError(prefix + error.what());
    } catch (const pqxx::integrity_constraint_violation& error) {
        throw ValidationError(prefix + error.what());
    } catch (const pqxx::data_exception& error) {
        throw ValidationError(prefix + error.what());
    } catch (const pqxx::sql_error& error) {
        // Class 08 (connection exception) and 57 (operator intervention: admin shutdown,
        // crash recovery) mean this connection is gone.
        const std::string& state = error.sqlstate();
        // A statement or lock timeout (57014 query_canceled, 55P03 lock_not_available) ends
        // the statement, not the connection: retry later, on the same connection.
        if (state == "57014" || state == "55P03") throw ConflictError(prefix + error.what());
        // 25006 (read_only_sql_transaction): the server is, or turned into, a standby or a
        // read-only primary (a switchover demoted it): reconnect, so that a multi-host URL
        // with target_session_attrs=read-write finds the writable primary.
        if (state.rfind("08", 0) == 0 || state.rfind("57", 0) == 0 || state == "25006") {
            connection_.reset();
            throw UnavailableError(prefix + error.what());
        }
        // Class 54 (program limit exceeded: a value too large for an index, too many
        // elements) is the data's fault, like classes 22 and 23.
        if (state.rfind("54", 0) == 0) throw ValidationError(prefix + error.what());
        throw StoreError(prefix + error.what());
    } catch (const pqxx::failure& error) {
        connection_.reset();
        throw UnavailableError(prefix + error.what());
    } catch (const std::exception& error) {
        throw StoreError(prefix + error.what());
    }
}

namespace {

// Seconds and milliseconds, as libpq takes them. A dead idle connection is noticed after
// idle + interval·count = 11 s; unacknowledged data after 10 s.
constexpr std::pair<std::string_view, std::string_view> kConnectionDefaults[] = {
    {"connect_timeout", "5"},     {"keepalives", "1"},       {"keepalives_idle", "5"},
    {"keepalives_interval", "2"}, {"keepalives_count", "3"}, {"tcp_user_timeout", "10000"},
};

bool is_uri(std::string_view url) {
    return url.starts_with("postgresql://") || url.starts_with("postgres://");
}

bool url_sets(std::string_view url, std::string_view key) {
    const std::string pattern = is_uri(url) ? std::string{"[?&]"} + std::string{key} + "="
                                            : std::string{"(^|\\s)"} + std::string{key} + "\\s*=";
    return std::regex_search(url.begin(), url.end(), std::regex{pattern});
}

}  // namespace

std::string with_connection_defaults(std::string_view url) {
    std::string out{url};
    const bool uri = is_uri(url);
    // PGCONNECT_TIMEOUT is libpq's own default for connect_timeout: an operator's choice.
    const bool env_timeout = std::getenv("PGCONNECT_TIMEOUT") != nullptr;
    for (const auto& [key, value] : kConnectionDefaults) {
        if (url_sets(url, key) || (key == "connect_timeout" && env_timeout)) continue;
        if (uri) {
            // A query may be present, even empty ("db?") or ending in '&'.
            if (out.find('?') == std::string::npos) {
                out += '?';
            } else if (out.back() != '?' && out.back() != '&') {
                out += '&';
            }
        } else if (!out.empty()) {
            out += ' ';
        }
        out += std::string{key} + "=" + std::string{value};
    }
    return out;
}

std::string redact_database_url(std::string_view url) {
    static const std::regex uri_password{R"(://([^:/@]*):[^@]*@)"};
    static const std::regex keyword_password{R"((password\s*=\s*)('[^']*'|\S+))",
                                             std::regex::icase};
    std::string text{url};
    text = std::regex_replace(text, uri_password, "://$1:***@");
    text = std::regex_replace(text, keyword_password, "$1***");
    return text;
}

}  // namespace outboxd::store
