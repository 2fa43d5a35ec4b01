// `outboxd ctl --database` (README, "Operator CLI"): the parameter every call carries, the
// DATABASE column of listings that span databases, and --help.

#include <array>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ctl/api_client.hpp"
#include "ctl/table.hpp"
#include "outboxd/ctl/ctl.hpp"

using namespace outboxd::ctl;
using nlohmann::json;

TEST_CASE("a call's target gets ?database= or &database=, encoded", "[unit][ctl]") {
    CHECK(with_query("/v1/namespaces", "database", "billing") == "/v1/namespaces?database=billing");
    CHECK(with_query("/v1/dead-letters?limit=5", "database", "billing") ==
          "/v1/dead-letters?limit=5&database=billing");
    CHECK(with_query("/v1/outbox/a%3A0", "database", "a b&c") ==
          "/v1/outbox/a%3A0?database=a%20b%26c");
}

TEST_CASE("a DATABASE column comes first when more than one database appears", "[unit][ctl]") {
    const auto print = [](const json& items) {
        const DatabaseColumn database{items};
        Table table{database.headers({"KEY"})};
        for (const auto& item : items) table.add(database.cells(item, {cell(item["key"])}));
        std::ostringstream out;
        table.print(out);
        return out.str();
    };
    CHECK(print(json::parse(
              R"([{"key":"a","database":"orders"},{"key":"b","database":"billing"}])")) ==
          "DATABASE  KEY\n"
          "orders    a\n"
          "billing   b\n");
    // One database, or items that do not say: as before.
    CHECK(print(json::parse(
              R"([{"key":"a","database":"default"},{"key":"b","database":"default"}])")) ==
          "KEY\na\nb\n");
    CHECK(print(json::parse(R"([{"key":"a"},{"key":"b","database":null}])")) == "KEY\na\nb\n");
    CHECK_FALSE(DatabaseColumn{json::object()}.shown());
}

TEST_CASE("ctl --help names --database and its environment variable", "[unit][ctl]") {
    std::ostringstream out, err;
    const std::array<const char*, 2> argv{"ctl", "--help"};
    CHECK(run(2, argv.data(), out, err) == 0);
    CHECK_THAT(out.str(), Catch::Contains("--database") && Catch::Contains("OUTBOXD_DATABASE"));
}
