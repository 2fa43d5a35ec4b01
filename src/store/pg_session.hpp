#pragma once

// One libpqxx connection, its prepared statements and the store's error policy.
// Internal to src/store; single-threaded like the connection it owns.

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

namespace outboxd::store {

// When PostgreSQL plans a prepared statement.
enum class Plan {
    custom,   // at every execution, for its parameters (the default: see PgSession)
    generic,  // once per connection: for hot statements whose plan suits every parameter
};

// A named SQL statement. The name keys the prepared statement and error messages.
struct Statement {
    std::string_view name;
    std::string_view sql;
    Plan plan = Plan::custom;
};

// Whether the server no longer takes writes: a standby, or a primary turned read-only (a
// switchover demoted it, or default_transaction_read_only). One row, one boolean.
inline constexpr const char* kReadOnlyServerSql =
    "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool";
// How often a long-lived connection asks it. A session that only reads (settings, probes) would
// otherwise stay on a demoted primary for good, and see its stale data.
inline constexpr auto kReadOnlyCheckEvery = std::chrono::seconds{10};

class PgSession {
public:
    // `setup` statements run once on every new connection, before anything else (session
    // settings such as planner preferences). The URL gets the connection defaults of
    // with_connection_defaults().
    PgSession(const std::string& database_url, std::vector<Statement> statements,
              std::vector<std::string> setup = {});
    PgSession(const std::string& database_url, std::span<const Statement> statements,
              std::vector<std::string> setup = {})
        : PgSession(database_url, std::vector<Statement>(statements.begin(), statements.end()),
                    std::move(setup)) {}

    // Runs `body(pqxx::work&)`, which executes `statement` (and maybe others, planned the
    // way `statement` is), in one transaction and commits it. pqxx failures are rethrown as
    // store errors named after the statement (see rethrow_as_store_error); a broken
    // connection is dropped so the next call reconnects and re-prepares.
    template <typename Body>
    auto transact(const Statement& statement, Body&& body) {
        try {
            pqxx::work tx{connection(statement.plan)};
            if constexpr (std::is_void_v<decltype(body(tx))>) {
                body(tx);
                tx.commit();
            } else {
                auto result = body(tx);
                tx.commit();
                return result;
            }
        } catch (...) {
            rethrow_as_store_error(statement.name);
        }
    }

    // Runs `body(pqxx::nontransaction&)` in autocommit mode: one round trip for one
    // statement, which PostgreSQL runs atomically on its own. No BEGIN/COMMIT exchange: for
    // single-statement operations on the hot path. Errors as in transact().
    template <typename Body>
    auto autocommit(const Statement& statement, Body&& body) {
        try {
            pqxx::nontransaction tx{connection(statement.plan)};
            return body(tx);
        } catch (...) {
            rethrow_as_store_error(statement.name);
        }
    }

    // The live connection, connecting (and preparing statements) when there is none, with
    // prepared statements planned the way `plan` says from now on.
    pqxx::connection& connection(Plan plan = Plan::custom);
    // Closes the connection, if any; the next call connects again.
    void disconnect() { connection_.reset(); }

    // Translates the in-flight exception into the store's error types. Must be called
    // from a catch block.
    [[noreturn]] void rethrow_as_store_error(std::string_view operation);

private:
    pqxx::connection& connect();

    std::string database_url_;
    std::vector<Statement> statements_;
    std::vector<std::string> setup_;
    // Drops the connection when the server no longer takes writes (asked at most every
    // kReadOnlyCheckEvery), so that the next connect finds the writable primary of a
    // multi-host URL with target_session_attrs=read-write.
    void leave_read_only_server();

    std::unique_ptr<pqxx::connection> connection_;
    Plan plan_ = Plan::custom;  // the connection's plan_cache_mode
    std::chrono::steady_clock::time_point role_checked_at_{};
};

// Text of a libpq connection string or URI with any password masked, for logs and errors.
[[nodiscard]] std::string redact_database_url(std::string_view url);

// `url` (a libpq connection string or URI) with the settings that make a dead database
// connection noticed within seconds, unless the URL sets them itself: connect_timeout
// (a server that accepts but never answers), TCP keepalives (an idle connection whose peer
// is gone) and tcp_user_timeout (sent data that is never acknowledged).
[[nodiscard]] std::string with_connection_defaults(std::string_view url);

}  // namespace outboxd::store
