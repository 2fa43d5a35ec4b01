#pragma once

// Shared setup for store tests: a fresh database, a store on it and an owner that holds
// the lease on every shard (as a single cluster node would).

#include <string>

#include "test_database.hpp"
#include "test_store.hpp"

namespace outboxd::test {

inline store::NewRow new_row(const std::string& workflow_id, std::int64_t ordinal,
                             const std::string& namespace_name = "default",
                             const std::string& task_queue = "default",
                             std::optional<std::string> node = std::nullopt) {
    store::NewRow row;
    row.workflow_id = workflow_id;
    row.ordinal = ordinal;
    row.activity_type = "charge";
    row.input_json = R"({"amount":42})";
    row.namespace_name = namespace_name;
    row.task_queue = task_queue;
    row.node = std::move(node);
    return row;
}

struct StoreFixture {
    TestDatabase db;
    test::TestStore store{db.url()};
    store::Owner owner{"node-a/boot-1", store::ShardRanges::all()};

    StoreFixture() { db.lease(owner.incarnation); }

    store::Status status_of(const std::string& dispatch_key) {
        const auto row = store.find(dispatch_key);
        if (!row) throw std::runtime_error("no row " + dispatch_key);
        return row->status;
    }
    std::int64_t count(const std::string& where) {
        return db.exec("SELECT count(*) FROM outbox WHERE " + where)[0][0].as<std::int64_t>();
    }
    // Makes `dispatch_key`'s claim look `age_ms` old (the claim instant is the DB's own).
    void age_claim(const std::string& dispatch_key, int age_ms) {
        db.exec("UPDATE outbox SET claimed_at = now() - interval '" + std::to_string(age_ms) +
                " milliseconds' WHERE dispatch_key = '" + dispatch_key + "'");
    }
};

}  // namespace outboxd::test
