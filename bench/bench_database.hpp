#pragma once

// The benchmark's PostgreSQL cluster: a fresh database per scenario (CREATE DATABASE +
// the bundled migrations), and the bulk SQL that prepares a scenario's data. Everything
// here runs on the calling thread with its own short-lived connections; libpqxx errors
// propagate (a benchmark that cannot set up its data ends with the error).

#include <cstdint>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace outboxd::bench {

class BenchDatabases {
public:
    // `admin_url`: a postgresql:// URI of a superuser on the bench cluster, e.g.
    // postgresql://postgres@127.0.0.1:5432/postgres (its database is only used to
    // create and drop the others).
    explicit BenchDatabases(std::string admin_url);

    // The URI of database `name` on the same cluster.
    [[nodiscard]] std::string url(const std::string& name) const;

    // Drops `name` if it exists, creates it and applies the migrations. Returns its URI.
    std::string create_migrated(const std::string& name);
    // Drops `name` if it exists and creates it as a copy of `template_name` (which must
    // have no connections). Returns its URI.
    std::string create_copy(const std::string& name, const std::string& template_name);
    void drop(const std::string& name);

    [[nodiscard]] std::string server_version() const;
    // Durability settings as the server reports them, e.g. "fsync=on synchronous_commit=on".
    [[nodiscard]] std::string durability() const;

private:
    void exec_admin(const std::string& sql) const;

    std::string admin_url_;
};

// Stages `rows` pending no-op rows, due now, keys `<prefix><n>` for n in [1, rows], each
// its own workflow, in transactions of a few tens of thousands of rows.
void stage_pending_rows(const std::string& url, std::int64_t rows, const std::string& prefix);

// Stops (pg_ctl stop -m fast) or starts again the PostgreSQL instance of `data_dir` with its
// own pg_ctl, as its owner (postgres when we are root), with the options it was started with
// (postmaster.opts). Throws std::runtime_error when pg_ctl fails.
void instance_ctl(const std::string& data_dir, bool start);

// The same, dealt over routes: row n goes to namespaces[n % N] and task_queues[(n / N) % Q],
// so every route gets an equal part (±1) spread evenly over the staging order.
void stage_routed_rows(const std::string& url, std::int64_t rows, const std::string& prefix,
                       const std::vector<std::string>& namespaces,
                       const std::vector<std::string>& task_queues);

// `names` as a PostgreSQL array literal, for a `$n::text[]` parameter.
[[nodiscard]] std::string text_array(const std::vector<std::string>& names);

// Inserts `rows` finished (`done`) rows whose finished_at is an hour old: history that
// retention has not removed yet.
void insert_history_rows(const std::string& url, std::int64_t rows);

// VACUUM ANALYZE outbox, then CHECKPOINT, so that every timed phase starts from the same
// state: statistics current, hint bits set, no checkpoint due in the middle of it.
void settle(const std::string& url);

// Current WAL position in bytes (pg_current_wal_lsn()), for WAL volume per row.
[[nodiscard]] std::int64_t wal_position(pqxx::connection_base& conn);

[[nodiscard]] std::int64_t count_rows(pqxx::connection_base& conn, const std::string& where);

}  // namespace outboxd::bench
