#pragma once

// A fresh, migrated database per test on the throwaway cluster the CTest fixture started
// (scripts/pgtmp). The cluster is found through OUTBOXD_TEST_DATABASE_URL (an admin URI
// such as postgresql://postgres@127.0.0.1:55801/postgres) or OUTBOXD_TEST_PG_DIR (the
// directory pgtmp wrote its url file to).

#include <string>

#include <pqxx/pqxx>

#include "outboxd/store/shard_ranges.hpp"

namespace outboxd::test {

class TestDatabase {
public:
    // Creates a uniquely named database, migrated unless `migrated` is false.
    explicit TestDatabase(bool migrated = true);
    ~TestDatabase();  // drops it, terminating leftover connections
    TestDatabase(const TestDatabase&) = delete;
    TestDatabase& operator=(const TestDatabase&) = delete;

    [[nodiscard]] const std::string& url() const { return url_; }
    [[nodiscard]] const std::string& name() const { return name_; }

    // A new connection for raw SQL in tests.
    [[nodiscard]] pqxx::connection connect() const { return pqxx::connection{url_}; }
    // Runs `sql` in its own transaction and returns the result.
    pqxx::result exec(const std::string& sql) const;
    // Leases `ranges` to `incarnation` for an hour, as a cluster node would.
    void lease(const std::string& incarnation,
               const store::ShardRanges& ranges = store::ShardRanges::all()) const;

    // The admin URI of the test cluster (database "postgres").
    [[nodiscard]] static std::string admin_url();
    // `admin_url()` with its database replaced by `database`.
    [[nodiscard]] static std::string url_for(const std::string& database);

private:
    std::string name_;
    std::string url_;
};

}  // namespace outboxd::test
