#include "bench_database.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "outboxd/store/migrator.hpp"

namespace outboxd::bench {
namespace {

constexpr std::int64_t kStageChunk = 50'000;
constexpr std::int64_t kHistoryChunk = 500'000;

// Only names the driver makes itself reach SQL, but quote them anyway.
std::string quoted(const std::string& name) { return "\"" + name + "\""; }

}  // namespace

BenchDatabases::BenchDatabases(std::string admin_url) : admin_url_(std::move(admin_url)) {
    if (admin_url_.rfind("postgresql://", 0) != 0 && admin_url_.rfind("postgres://", 0) != 0) {
        throw std::invalid_argument{"--database-url must be a postgresql:// URI"};
    }
}

std::string BenchDatabases::url(const std::string& name) const {
    // postgresql://user@host:port/db?params: replace the path, keep the parameters.
    const auto authority = admin_url_.find("://") + 3;
    const auto query = admin_url_.find('?', authority);
    const auto path = std::min(admin_url_.find('/', authority), query);
    const auto base = admin_url_.substr(0, path);
    const auto params = query == std::string::npos ? std::string{} : admin_url_.substr(query);
    return base + "/" + name + params;
}

void BenchDatabases::exec_admin(const std::string& sql) const {
    pqxx::connection conn{admin_url_};
    pqxx::nontransaction tx{conn};
    tx.exec(sql);
}

std::string BenchDatabases::create_migrated(const std::string& name) {
    drop(name);
    exec_admin("CREATE DATABASE " + quoted(name));
    auto database_url = url(name);
    outboxd::store::migrate(database_url);
    return database_url;
}

std::string BenchDatabases::create_copy(const std::string& name, const std::string& template_name) {
    drop(name);
    // FILE_COPY copies the template's files; the default (WAL_LOG) would write a
    // multi-gigabyte history through the WAL once per copy.
    exec_admin("CREATE DATABASE " + quoted(name) + " TEMPLATE " + quoted(template_name) +
               " STRATEGY = FILE_COPY");
    return url(name);
}

void BenchDatabases::drop(const std::string& name) {
    exec_admin("DROP DATABASE IF EXISTS " + quoted(name) + " WITH (FORCE)");
}

std::string BenchDatabases::server_version() const {
    pqxx::connection conn{admin_url_};
    pqxx::nontransaction tx{conn};
    return tx.exec1("SHOW server_version")[0].as<std::string>();
}

std::string BenchDatabases::durability() const {
    pqxx::connection conn{admin_url_};
    pqxx::nontransaction tx{conn};
    std::string result;
    for (const char* setting :
         {"fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "max_wal_size"}) {
        if (!result.empty()) result += " ";
        result += std::string{setting} + "=" +
                  tx.exec1(std::string{"SHOW "} + setting)[0].as<std::string>();
    }
    return result;
}

void stage_pending_rows(const std::string& url, std::int64_t rows, const std::string& prefix) {
    stage_routed_rows(url, rows, prefix, {"default"}, {"default"});
}

void stage_routed_rows(const std::string& url, std::int64_t rows, const std::string& prefix,
                       const std::vector<std::string>& namespaces,
                       const std::vector<std::string>& task_queues) {
    if (namespaces.empty() || task_queues.empty()) {
        throw std::invalid_argument{"stage_routed_rows: no namespace or no task queue"};
    }
    pqxx::connection conn{url};
    conn.prepare("stage", R"SQL(
INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, namespace, task_queue)
SELECT $1 || g, $1 || 'wf-' || g, 0, 'noop',
       ($4::text[])[1 + (g % cardinality($4::text[]))::int],
       ($5::text[])[1 + ((g / cardinality($4::text[])) % cardinality($5::text[]))::int]
FROM generate_series($2::bigint, $3::bigint) g)SQL");
    const auto namespace_array = text_array(namespaces);
    const auto queue_array = text_array(task_queues);
    for (std::int64_t first = 1; first <= rows; first += kStageChunk) {
        const auto last = std::min(rows, first + kStageChunk - 1);
        pqxx::work tx{conn};
        tx.exec_prepared("stage", prefix, first, last, namespace_array, queue_array);
        tx.commit();
    }
}

std::string text_array(const std::vector<std::string>& names) {
    std::string literal = "{";
    for (const auto& name : names) {
        if (literal.size() > 1) literal += ',';
        literal += '"';
        for (const char c : name) {
            if (c == '"' || c == '\\') literal += '\\';
            literal += c;
        }
        literal += '"';
    }
    return literal + "}";
}

void insert_history_rows(const std::string& url, std::int64_t rows) {
    pqxx::connection conn{url};
    conn.prepare("history", R"SQL(
INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, status,
                    visible_after, created_at, finished_at)
SELECT 'hist-' || g, 'hist-wf-' || g, 0, 'noop', 'done',
       now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series($1::bigint, $2::bigint) g)SQL");
    for (std::int64_t first = 1; first <= rows; first += kHistoryChunk) {
        const auto last = std::min(rows, first + kHistoryChunk - 1);
        pqxx::work tx{conn};
        tx.exec_prepared("history", first, last);
        tx.commit();
    }
}

void settle(const std::string& url) {
    pqxx::connection conn{url};
    pqxx::nontransaction tx{conn};
    tx.exec("VACUUM ANALYZE outbox");
    tx.exec("CHECKPOINT");
}

std::int64_t wal_position(pqxx::connection_base& conn) {
    pqxx::nontransaction tx{conn};
    return tx.exec1("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")[0].as<std::int64_t>();
}

std::int64_t count_rows(pqxx::connection_base& conn, const std::string& where) {
    pqxx::nontransaction tx{conn};
    return tx.exec1("SELECT count(*) FROM outbox WHERE " + where)[0].as<std::int64_t>();
}

void instance_ctl(const std::string& data_dir, bool start) {
    std::ifstream opts_file{data_dir + "/postmaster.opts"};
    std::string opts;
    std::getline(opts_file, opts);
    const auto binary_end = opts.find(' ');
    if (binary_end == std::string::npos) {
        throw std::runtime_error{"cannot read " + data_dir + "/postmaster.opts"};
    }
    const auto postgres = opts.substr(0, binary_end);
    const auto bin = postgres.substr(0, postgres.rfind('/'));
    std::string command = ::geteuid() == 0 ? "runuser -u postgres -- " : "";
    command += bin + "/pg_ctl -D '" + data_dir + "' -w -t 60 ";
    if (start) {
        // The options after "-D <dir>", as given: "-c" "listen_addresses=…" "-p" "25901" …
        std::string rest = opts.substr(binary_end + 1);
        const auto data_option = rest.find("\"-D\"");
        if (data_option != std::string::npos) {
            const auto after = rest.find('"', rest.find('"', data_option + 5) + 1);
            rest.erase(data_option, after + 1 - data_option);
        }
        std::string unquoted;
        for (const char c : rest) {
            if (c != '"') unquoted += c;
        }
        command += "-l '" + data_dir + "/../server.log' -o '" + unquoted + "' start";
    } else {
        command += "-m fast stop";
    }
    command += " >/dev/null";
    if (std::system(command.c_str()) != 0) throw std::runtime_error{"failed: " + command};
}

}  // namespace outboxd::bench
