// The dead-letter routes' filters, limits and cursors against hostile input: each bad value is
// refused with a message naming the parameter, and nothing else is taken from the request.

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <catch2/catch.hpp>

#include "http/dead_letter_params.hpp"

using namespace outboxd;
using http::DeadLetterBulk;
using http::DeadLetterQuery;

namespace {

std::string query_error(const std::map<std::string, std::string>& query) {
    const auto parsed = http::parse_dead_letter_query(query, 1000);
    const auto* error = std::get_if<std::string>(&parsed);
    return error ? *error : std::string{};
}

std::string bulk_error(const std::string& body) {
    const auto parsed = http::parse_dead_letter_bulk(body);
    const auto* error = std::get_if<std::string>(&parsed);
    return error ? *error : std::string{};
}

}  // namespace

TEST_CASE("dead-letter filters refuse NUL, bad UTF-8, huge numbers, megabytes and deep nesting",
          "[unit][http]") {
    const std::string nul{"ns\0x", 4};
    const std::string bad_utf8 = "\xff\xfe";
    const std::string megabyte(1 << 20, 'a');
    for (const char* key : {"namespace", "activity_type", "error"}) {
        INFO(key);
        CHECK_THAT(query_error({{key, nul}}), Catch::Contains(key) && Catch::Contains("NUL"));
        CHECK_THAT(query_error({{key, bad_utf8}}), Catch::Contains("UTF-8"));
        CHECK_THAT(query_error({{key, megabyte}}), Catch::Contains("longer than"));
    }
    CHECK_THAT(query_error({{"older_than_s", "99999999999999999999999"}}),
               Catch::Contains("older_than_s"));
    CHECK_THAT(query_error({{"older_than_s", "1e9"}}), Catch::Contains("older_than_s"));
    CHECK_THAT(query_error({{"limit", "99999999999999999999999"}}), Catch::Contains("limit"));
    CHECK_THAT(query_error({{"after", "99999999999999999999999.1"}}), Catch::Contains("after"));
    CHECK_THAT(query_error({{"after", "1.-5"}}), Catch::Contains("after"));
    CHECK_THAT(query_error({{"after", std::string{"1.2\0", 4}}}), Catch::Contains("after"));

    const std::string deep = std::string(10000, '[') + std::string(10000, ']');
    CHECK_THAT(bulk_error(deep), Catch::Contains("deep"));
    CHECK_THAT(bulk_error(R"({"limit": 18446744073709551615})"), Catch::Contains("limit"));
    CHECK_THAT(bulk_error(R"({"older_than_s": -9223372036854775808})"),
               Catch::Contains("older_than_s"));
    CHECK_THAT(bulk_error(R"({"older_than_s": 1e300})"), Catch::Contains("integer"));
    CHECK_THAT(bulk_error(R"({"namespace": "a\u0000b"})"), Catch::Contains("NUL"));
    CHECK_THAT(bulk_error(R"({"error_contains": ")" + megabyte + R"("})"),
               Catch::Contains("longer than"));
    CHECK_THAT(bulk_error("{\"activity_type\": \"\xff\"}"), Catch::Contains("JSON"));
    CHECK_THAT(bulk_error(R"({"namespace": ["x"]})"), Catch::Contains("string"));
}

TEST_CASE("dead-letter filters take what they are given, and a cursor round trips",
          "[unit][http]") {
    const auto parsed = http::parse_dead_letter_query(
        {{"namespace", "billing"}, {"error", "declined"}, {"older_than_s", "60"}, {"limit", "5"}},
        1000);
    const auto& query = std::get<DeadLetterQuery>(parsed);
    CHECK(query.filter.namespace_name == "billing");
    CHECK(query.filter.error_contains == "declined");
    CHECK(query.filter.older_than_s == 60);
    CHECK(query.limit == 5);
    const store::DeadLetterCursor cursor{
        store::TimePoint{std::chrono::microseconds{1700000000123456}}, 42};
    const auto back = http::decode_cursor(http::encode_cursor(cursor));
    REQUIRE(back);
    CHECK(back->failed_at == cursor.failed_at);
    CHECK(back->id == 42);
    const auto bulk = std::get<DeadLetterBulk>(http::parse_dead_letter_bulk(""));
    CHECK(bulk.limit == 1000);
    CHECK_FALSE(bulk.filter.namespace_name);
}

TEST_CASE("a page cursor names its database across several, and stays as it was within one",
          "[unit][http]") {
    const store::DeadLetterCursor at{store::TimePoint{std::chrono::microseconds{1700000000123456}},
                                     42};
    CHECK(http::encode_page_cursor({at, std::nullopt}) == http::encode_cursor(at));
    const auto text = http::encode_page_cursor({at, "billing"});
    CHECK(text == http::encode_cursor(at) + ".billing");
    const auto back = http::decode_page_cursor(text);
    REQUIRE(back);
    CHECK(back->at.failed_at == at.failed_at);
    CHECK(back->at.id == 42);
    CHECK(back->database == "billing");
    const auto plain = http::decode_page_cursor(http::encode_cursor(at));
    REQUIRE(plain);
    CHECK_FALSE(plain->database);
    for (const char* bad : {"1.2.", "1.2.Billing", "1.2.a.b", "1.2.caf\xc3\xa9", "1..billing",
                            ".2.billing", "1.2.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
        CAPTURE(bad);
        CHECK_FALSE(http::decode_page_cursor(bad));
        CHECK_THAT(query_error({{"after", bad}}), Catch::Contains("after"));
    }
    // ?database= is the router's: the filters leave it be.
    CHECK(query_error({{"database", "billing"}, {"limit", "5"}}).empty());
    CHECK_THAT(query_error({{"colour", "red"}}), Catch::Contains("database"));
}

TEST_CASE("pages over several databases give every dead letter once, in one order",
          "[unit][http]") {
    // Three databases' letters as their SQL would list them: (failed_at, id) descending,
    // after a cursor of their own; many ties on failed_at, within and across databases, and
    // the same ids in different databases.
    std::mt19937 random{7};
    std::map<std::string, std::vector<store::DeadLetter>> databases;
    for (const std::string name : {"orders", "billing", "shipping"}) {
        const int n = std::uniform_int_distribution<int>{0, 40}(random);
        for (int i = 1; i <= n; ++i) {
            store::DeadLetter letter;
            letter.dispatch_key = name + "-" + std::to_string(i);
            letter.id = i;
            letter.failed_at = store::TimePoint{
                std::chrono::seconds{std::uniform_int_distribution<int>{0, 5}(random)}};
            databases[name].push_back(letter);
        }
    }
    const auto list = [&](const std::string& name, std::int32_t limit,
                          const std::optional<store::DeadLetterCursor>& after) {
        auto letters = databases[name];
        std::erase_if(letters, [&](const store::DeadLetter& l) {
            return after &&
                   !(std::pair{*l.failed_at, l.id} < std::pair{after->failed_at, after->id});
        });
        std::sort(letters.begin(), letters.end(), [](const auto& a, const auto& b) {
            return std::pair{*a.failed_at, a.id} > std::pair{*b.failed_at, b.id};
        });
        if (letters.size() > static_cast<std::size_t>(limit)) letters.resize(limit);
        return letters;
    };
    for (const std::int32_t limit : {1, 2, 3, 7, 100}) {
        CAPTURE(limit);
        std::set<std::string> seen;
        std::vector<std::pair<std::string, store::DeadLetter>> shown;
        std::optional<http::PageCursor> after;
        for (int page = 0; page < 200; ++page) {
            // As the route does: each database's first `limit` after the cursor, merged.
            std::vector<std::pair<std::string, store::DeadLetter>> merged;
            for (const auto& [name, letters] : databases) {
                std::optional<store::DeadLetterCursor> own;
                if (after) own = http::cursor_within(name, *after);
                for (auto& letter : list(name, limit, own)) merged.emplace_back(name, letter);
            }
            std::sort(merged.begin(), merged.end(), [](const auto& a, const auto& b) {
                return http::listed_before(a.first, a.second, b.first, b.second);
            });
            if (merged.size() > static_cast<std::size_t>(limit)) merged.resize(limit);
            for (const auto& [name, letter] : merged) {
                CHECK(seen.insert(letter.dispatch_key).second);
                shown.emplace_back(name, letter);
            }
            if (static_cast<std::int32_t>(merged.size()) < limit) break;
            after = http::PageCursor{{*merged.back().second.failed_at, merged.back().second.id},
                                     merged.back().first};
        }
        std::size_t total = 0;
        for (const auto& [name, letters] : databases) total += letters.size();
        CHECK(seen.size() == total);
        for (std::size_t i = 1; i < shown.size(); ++i) {
            CHECK(http::listed_before(shown[i - 1].first, shown[i - 1].second, shown[i].first,
                                      shown[i].second));
        }
    }
}
