// The pooler probe against a direct connection (the PgBouncer cases are end-to-end:
// tests/e2e/failover_e2e_test.cpp).

#include <catch2/catch.hpp>

#include "outboxd/store/pooler_probe.hpp"
#include "outboxd/store/store_error.hpp"
#include "test_database.hpp"

namespace outboxd::test {

TEST_CASE("a direct connection shares no server process; an unreachable one is unavailable",
          "[pg][store]") {
    TestDatabase db;
    CHECK_FALSE(store::shared_server_process(db.url()).has_value());
    CHECK_THROWS_AS(store::shared_server_process("postgresql://postgres@127.0.0.1:1/none"),
                    store::UnavailableError);
    const auto message = store::pooler_refusal("orders", 4242);
    CHECK(message.find("pool_mode=transaction") != std::string::npos);
    CHECK(message.find("database orders") != std::string::npos);
    CHECK(message.find("4242") != std::string::npos);
}

}  // namespace outboxd::test
