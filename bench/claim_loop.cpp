#include "claim_loop.hpp"

#include <unistd.h>

#include <atomic>
#include <exception>
#include <future>
#include <latch>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "bench_database.hpp"

namespace outboxd::bench {
namespace {

// Exactly the statements of issue 7's floor. claimed_at/claimed_by/claim_token are set
// while claimed and cleared when done (the table's CHECK constraint insists).
constexpr const char* kClaimSql = R"SQL(
WITH c AS (SELECT id FROM outbox WHERE status = 'pending' AND visible_after <= now()
           ORDER BY visible_after, id LIMIT $1 FOR UPDATE SKIP LOCKED)
UPDATE outbox o SET status = 'claimed', claimed_at = now(), claimed_by = 'bench', claim_token = 1
FROM c WHERE o.id = c.id RETURNING o.id)SQL";

constexpr const char* kCompleteSql = R"SQL(
UPDATE outbox SET status = 'done', finished_at = now(), claimed_at = NULL, claimed_by = NULL,
                  claim_token = NULL
WHERE id = ANY ($1::bigint[]))SQL";

constexpr const char* kRemoveSql = "DELETE FROM outbox WHERE id = ANY ($1::bigint[])";

// The index the floor's claim reads (due rows across routes, oldest first). outboxd's
// schema has none since migration 0008 (every claim of a node is scoped to a route and reads
// the route index), so the floor brings its own, built before the clock starts: each side
// is measured with the index its statements need.
constexpr const char* kFloorIndexSql =
    "CREATE INDEX IF NOT EXISTS bench_floor_due_idx ON outbox (visible_after, id)"
    " WHERE status = 'pending'";

struct Shared {
    Shared(int clients, std::shared_future<std::chrono::steady_clock::time_point> start)
        : ready(clients), go(std::move(start)) {}

    std::latch ready;
    std::shared_future<std::chrono::steady_clock::time_point> go;
    std::atomic<std::int64_t> rows{0};
    std::atomic<std::int64_t> claims{0};
    std::atomic<bool> capped{false};
    std::mutex error_mutex;
    std::exception_ptr error;
};

void run_client(const std::string& url, const ClaimLoopConfig& config, Shared& shared) {
    bool counted = false;
    try {
        pqxx::connection conn{url};
        conn.prepare("claim", kClaimSql);
        conn.prepare("finish", config.finish == Finish::complete ? kCompleteSql : kRemoveSql);
        shared.ready.count_down();
        counted = true;
        const auto start = shared.go.get();
        const auto deadline = config.time_limit ? start + *config.time_limit
                                                : std::chrono::steady_clock::time_point::max();
        std::string ids;
        for (;;) {
            if (std::chrono::steady_clock::now() >= deadline) {
                shared.capped = true;
                return;
            }
            pqxx::result claimed;
            {
                pqxx::work tx{conn};
                claimed = tx.exec_prepared("claim", config.batch);
                tx.commit();
            }
            if (claimed.empty()) return;
            ids = "{";
            for (const auto& row : claimed) {
                if (ids.size() > 1) ids += ',';
                ids += row[0].c_str();
            }
            ids += '}';
            {
                pqxx::work tx{conn};
                tx.exec_prepared("finish", ids);
                tx.commit();
            }
            shared.rows += static_cast<std::int64_t>(claimed.size());
            ++shared.claims;
        }
    } catch (...) {
        if (!counted) shared.ready.count_down();  // never leave the starter waiting
        const std::lock_guard lock{shared.error_mutex};
        if (!shared.error) shared.error = std::current_exception();
    }
}

}  // namespace

std::string describe(const ClaimLoopConfig& config) {
    return std::string{config.finish == Finish::complete ? "claim+complete" : "claim+delete"} +
           " batch " + std::to_string(config.batch) + " x " + std::to_string(config.clients) +
           (config.clients == 1 ? " client" : " clients");
}

ClaimLoopResult run_claim_loop(const std::string& url, const ClaimLoopConfig& config,
                               const PgClusterCpu& pg_cpu) {
    std::promise<std::chrono::steady_clock::time_point> go;
    Shared shared{config.clients, go.get_future().share()};
    std::vector<std::thread> clients;
    for (int i = 0; i < config.clients; ++i) {
        clients.emplace_back([&] { run_client(url, config, shared); });
    }
    shared.ready.wait();
    ClaimLoopResult result;
    std::optional<pqxx::connection> probe;
    std::int64_t wal_before = 0;
    try {
        probe.emplace(url);
        pqxx::nontransaction{*probe}.exec(kFloorIndexSql);
        pqxx::nontransaction{*probe}.exec("ANALYZE outbox");
        wal_before = wal_position(*probe);
    } catch (...) {
        go.set_exception(std::current_exception());  // the clients end at once
        for (auto& client : clients) client.join();
        throw;
    }
    const auto cpu_before = pg_cpu.sample();
    const auto host_before = read_host_cpu();
    const auto self_before = process_cpu_seconds(::getpid());
    const auto start = std::chrono::steady_clock::now();
    go.set_value(start);
    for (auto& client : clients) client.join();
    const auto end = std::chrono::steady_clock::now();
    result.pg_cpu_s = pg_cpu.sample() - cpu_before;
    result.foreign_cpu =
        foreign_share(host_before, read_host_cpu(),
                      result.pg_cpu_s + process_cpu_seconds(::getpid()) - self_before);
    result.wal_bytes = wal_position(*probe) - wal_before;
    if (shared.error) std::rethrow_exception(shared.error);
    result.seconds = std::chrono::duration<double>(end - start).count();
    result.rows = shared.rows;
    result.claims = shared.claims;
    result.capped = shared.capped;
    return result;
}

ClaimLoopResult stage_and_claim(const BenchContext& context, const std::string& database,
                                std::int64_t rows, const ClaimLoopConfig& config) {
    const auto url = context.databases.create_migrated(database);
    stage_pending_rows(url, rows, "sql-");
    settle(url);
    auto result = run_claim_loop(url, config, context.pg_cpu);
    context.databases.drop(database);
    if (result.rows != rows) {
        throw std::runtime_error{describe(config) + ": finished " + std::to_string(result.rows) +
                                 " of " + std::to_string(rows) + " rows"};
    }
    return result;
}

}  // namespace outboxd::bench
