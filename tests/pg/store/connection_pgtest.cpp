// How store connections notice a database that went away or hangs.

#include <chrono>
#include <cstdlib>

#include <catch2/catch.hpp>
#include <libpq-fe.h>

#include "outboxd/store/store_error.hpp"
#include "store/pg_session.hpp"
#include "store_fixture.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::with_connection_defaults;

TEST_CASE("connection defaults are added to both URL forms, never over the user's own",
          "[pg][store]") {
    ::unsetenv("PGCONNECT_TIMEOUT");
    const auto uri = with_connection_defaults("postgresql://u@h:5432/db");
    CHECK(uri.starts_with("postgresql://u@h:5432/db?connect_timeout=5&keepalives=1"));
    CHECK(uri.find("tcp_user_timeout=10000") != std::string::npos);
    const auto with_query =
        with_connection_defaults("postgres://h/db?sslmode=require&connect_timeout=30");
    CHECK(with_query.find("connect_timeout=30") != std::string::npos);
    CHECK(with_query.find("connect_timeout=5") == std::string::npos);
    CHECK(with_query.find("&keepalives=1") != std::string::npos);
    const auto keywords = with_connection_defaults("host=h dbname=db keepalives_idle = 60");
    CHECK(keywords.starts_with("host=h dbname=db keepalives_idle = 60 connect_timeout=5"));
    CHECK(keywords.find("keepalives_idle=5") == std::string::npos);
    CHECK(with_connection_defaults("").starts_with("connect_timeout=5 "));
    CHECK(with_connection_defaults("postgresql://h/db?")
              .starts_with("postgresql://h/db?connect_timeout=5&"));
    CHECK(with_connection_defaults("postgresql://h/db?sslmode=disable&")
              .starts_with("postgresql://h/db?sslmode=disable&connect_timeout=5&"));
    // Every form libpq must still accept.
    for (const auto& url :
         {std::string{"postgresql://h/db?"}, std::string{"postgresql://h/db?sslmode=disable&"},
          std::string{"host=h dbname=db"}}) {
        INFO(url);
        char* error = nullptr;
        PQconninfoOption* options = PQconninfoParse(with_connection_defaults(url).c_str(), &error);
        CHECK(options != nullptr);
        if (options) PQconninfoFree(options);
        if (error) PQfreemem(error);
    }
}

TEST_CASE(
    "a store with a statement timeout gives up on a blocked statement and keeps its "
    "connection",
    "[pg][store]") {
    test::TestDatabase db;
    test::TestStore api{db.url(), test::TestStore::Commits::durable, 200ms};
    CHECK(api.pause_workflow("warm-up"));  // connects
    auto blocker = db.connect();
    pqxx::work held{blocker};
    held.exec("INSERT INTO paused_workflows (workflow_id) VALUES ('contended')");
    const auto started = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(api.pause_workflow("contended"), store::ConflictError);
    const auto waited = std::chrono::steady_clock::now() - started;
    CHECK(waited < 5s);
    held.abort();
    CHECK(api.pause_workflow("contended"));
    CHECK(api.is_paused("contended"));
}
