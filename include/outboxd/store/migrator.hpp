#pragma once

// Schema migrations: the SQL files of sql/migrations/, compiled into the binary, applied
// in version order, each once, each in its own transaction (a failed migration leaves
// nothing behind), recorded in schema_migrations, under a PostgreSQL advisory lock so that
// nodes starting together migrate once.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace outboxd::store {

struct Migration {
    std::int32_t version = 0;
    std::string_view name;
    std::string_view sql;
};

// The migrations bundled into this build, by ascending version.
[[nodiscard]] std::span<const Migration> bundled_migrations();

struct MigrationReport {
    std::vector<std::int32_t> applied;  // versions applied by this call
    std::int32_t current_version = 0;   // highest version recorded afterwards
};

// Applies every migration not yet recorded. Throws MigrationError naming the migration
// that failed, or when a recorded migration's checksum differs from the bundled one (the
// file was edited after it was applied), or UnavailableError when the database is down.
MigrationReport migrate(const std::string& database_url,
                        std::span<const Migration> migrations = bundled_migrations());

// True when every bundled migration is recorded (readiness probe). Never throws for a
// missing schema_migrations table; throws UnavailableError when the database is down.
[[nodiscard]] bool migrations_current(const std::string& database_url,
                                      std::span<const Migration> migrations = bundled_migrations());

}  // namespace outboxd::store
