#include "outboxd/store/migrator.hpp"

#include <pqxx/pqxx>

#include "outboxd/store/store_error.hpp"
#include "pg_session.hpp"

namespace outboxd::store {
namespace {

// Session-level advisory lock key shared by every outboxd process ("outboxd" in ASCII).
constexpr std::int64_t kMigrationLockKey = 0x6f7574626f7864;

constexpr std::string_view kCreateLedger = R"SQL(
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
))SQL";

// FNV-1a 64: stable across builds and platforms, enough to notice an edited file.
std::string checksum(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
    return buffer;
}

std::string label(const Migration& m) {
    return std::to_string(m.version) + "_" + std::string{m.name};
}

// Throws unless `m` is recorded with the bundled checksum; returns whether it is recorded.
bool check_recorded(pqxx::connection& conn, const Migration& m) {
    pqxx::nontransaction query{conn};
    const auto result =
        query.exec_params("SELECT checksum FROM schema_migrations WHERE version = $1", m.version);
    if (result.empty()) return false;
    if (result[0][0].as<std::string>() != checksum(m.sql)) {
        throw MigrationError("migration " + label(m) +
                             " was applied with different contents; refusing to continue");
    }
    return true;
}

}  // namespace

MigrationReport migrate(const std::string& database_url, std::span<const Migration> migrations) {
    PgSession session{database_url, std::vector<Statement>{}};
    MigrationReport report;
    try {
        auto& conn = session.connection();
        pqxx::nontransaction{conn}.exec_params("SELECT pg_advisory_lock($1)", kMigrationLockKey);
        try {
            pqxx::nontransaction{conn}.exec(std::string{kCreateLedger});
            for (const auto& m : migrations) {
                if (check_recorded(conn, m)) {
                    report.current_version = m.version;
                    continue;
                }
                try {
                    pqxx::work tx{conn};
                    tx.exec(std::string{m.sql});
                    tx.exec_params(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, "
                        "$3)",
                        m.version, std::string{m.name}, checksum(m.sql));
                    tx.commit();
                } catch (const pqxx::broken_connection&) {
                    throw;
                } catch (const std::exception& error) {
                    throw MigrationError("migration " + label(m) + " failed: " + error.what());
                }
                report.applied.push_back(m.version);
                report.current_version = m.version;
            }
        } catch (...) {
            if (conn.is_open()) {
                pqxx::nontransaction{conn}.exec_params("SELECT pg_advisory_unlock($1)",
                                                       kMigrationLockKey);
            }
            throw;
        }
        pqxx::nontransaction{conn}.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLockKey);
    } catch (...) {
        session.rethrow_as_store_error("migrate");
    }
    return report;
}

bool migrations_current(const std::string& database_url, std::span<const Migration> migrations) {
    PgSession session{database_url, std::vector<Statement>{}};
    try {
        auto& conn = session.connection();
        pqxx::nontransaction query{conn};
        if (query.exec("SELECT to_regclass('schema_migrations') IS NOT NULL")[0][0].as<bool>() ==
            false) {
            return migrations.empty();
        }
        for (const auto& m : migrations) {
            const auto result = query.exec_params(
                "SELECT checksum FROM schema_migrations WHERE version = $1", m.version);
            if (result.empty() || result[0][0].as<std::string>() != checksum(m.sql)) return false;
        }
        return true;
    } catch (...) {
        session.rethrow_as_store_error("migrations_current");
    }
}

}  // namespace outboxd::store
