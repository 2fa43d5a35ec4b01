#pragma once

// The pure-SQL claim loops: the floor of issue 7 and the grid behind sql_limit.
//
// Each client is a thread with its own connection and prepared statements, repeating
//   BEGIN; WITH c AS (SELECT id … ORDER BY visible_after, id LIMIT batch FOR UPDATE SKIP LOCKED)
//          UPDATE outbox … status = 'claimed' … RETURNING o.id; COMMIT;
//   then, in its own transaction, marks those ids done (or deletes them)
// until a claim finds nothing. No push, no worker: what the database alone costs per row.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "bench_context.hpp"
#include "proc_stat.hpp"

namespace outboxd::bench {

enum class Finish { complete, remove };

struct ClaimLoopConfig {
    int batch = 100;
    int clients = 1;
    Finish finish = Finish::complete;
    // Stop after this long even if rows are left (the old-snapshot scenario); rows/s is
    // then over the rows finished so far.
    std::optional<std::chrono::milliseconds> time_limit;
};

struct ClaimLoopResult {
    std::int64_t rows = 0;
    double seconds = 0;
    bool capped = false;  // time_limit ended it
    double pg_cpu_s = 0;
    std::int64_t wal_bytes = 0;
    std::int64_t claims = 0;  // claim transactions that returned rows
    // Share of the machine's CPU capacity used by processes other than PostgreSQL and this
    // driver during the loop: a shared machine shows here.
    double foreign_cpu = 0;

    [[nodiscard]] double rows_per_s() const { return seconds > 0 ? rows / seconds : 0.0; }
};

// The floor of issue 7: one client claiming 100 rows and marking them done.
inline constexpr ClaimLoopConfig kFloorLoop{100, 1, Finish::complete, std::nullopt};

[[nodiscard]] std::string describe(const ClaimLoopConfig& config);

// Runs the loop against `url` (which holds the staged pending rows) until no pending row
// is left or the time limit passes. Rethrows the first client's error.
ClaimLoopResult run_claim_loop(const std::string& url, const ClaimLoopConfig& config,
                               const PgClusterCpu& pg_cpu);

// The loop over `rows` rows staged into a fresh database `database`, dropped after. Throws
// std::runtime_error when it finished fewer rows than it staged.
ClaimLoopResult stage_and_claim(const BenchContext& context, const std::string& database,
                                std::int64_t rows, const ClaimLoopConfig& config);

}  // namespace outboxd::bench
