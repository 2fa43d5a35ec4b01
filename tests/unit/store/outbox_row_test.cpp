#include <catch2/catch.hpp>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/store/store_error.hpp"

using namespace outboxd::store;

namespace {

OutboxRow row_in(std::string ns, std::string queue, std::optional<std::string> node,
                 std::string activity = "charge") {
    OutboxRow row;
    row.namespace_name = std::move(ns);
    row.task_queue = std::move(queue);
    row.node = std::move(node);
    row.activity_type = std::move(activity);
    return row;
}

}  // namespace

TEST_CASE("status tokens round trip", "[unit][store]") {
    for (const auto status :
         {Status::pending, Status::claimed, Status::done, Status::failed, Status::cancelled}) {
        CHECK(parse_status(to_string(status)) == status);
    }
}

TEST_CASE("an unknown status token is a decode error naming it", "[unit][store]") {
    CHECK_THROWS_AS(parse_status("nope"), DecodeError);
    CHECK_THROWS_WITH(parse_status("nope"), Catch::Contains("'nope'"));
    CHECK_THROWS_AS(parse_status("Pending"), DecodeError);
    CHECK_THROWS_AS(parse_status(""), DecodeError);
}

TEST_CASE("dispatch key is workflow id, colon, ordinal", "[unit][store]") {
    CHECK(dispatch_key_for("wf-1", 7) == "wf-1:7");
    CHECK(dispatch_key_for("a:b", 0) == "a:b:0");
}

TEST_CASE("a scope admits its namespace and queue, unpinned rows and rows pinned to its node",
          "[unit][store]") {
    const ClaimScope scope{"remote", "gpu", "box-7", {}};
    CHECK(scope.admits(row_in("remote", "gpu", "box-7")));
    CHECK(scope.admits(row_in("remote", "gpu", std::nullopt)));
}

TEST_CASE("a scope rejects another namespace, queue or node", "[unit][store]") {
    const ClaimScope scope{"remote", "gpu", "box-7", {}};
    CHECK_FALSE(scope.admits(row_in("default", "gpu", std::nullopt)));
    CHECK_FALSE(scope.admits(row_in("remote", "cpu", std::nullopt)));
    CHECK_FALSE(scope.admits(row_in("remote", "gpu", "box-9")));
}

TEST_CASE("a scope without a node admits only unpinned rows", "[unit][store]") {
    const ClaimScope scope{"remote", "gpu", std::nullopt, {}};
    CHECK(scope.admits(row_in("remote", "gpu", std::nullopt)));
    CHECK_FALSE(scope.admits(row_in("remote", "gpu", "box-7")));
}

TEST_CASE("a scope without unpinned rows admits only rows pinned to its node", "[unit][store]") {
    ClaimScope scope{"remote", "gpu", "box-7", {}};
    scope.include_unpinned = false;
    CHECK(scope.admits(row_in("remote", "gpu", "box-7")));
    CHECK_FALSE(scope.admits(row_in("remote", "gpu", std::nullopt)));
}

TEST_CASE("a scope with activity types admits only those", "[unit][store]") {
    const ClaimScope scope{"default", "default", std::nullopt, {"charge", "refund"}};
    CHECK(scope.admits(row_in("default", "default", std::nullopt, "refund")));
    CHECK_FALSE(scope.admits(row_in("default", "default", std::nullopt, "email")));
}
