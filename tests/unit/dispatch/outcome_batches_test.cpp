#include <catch2/catch.hpp>

#include "outboxd/dispatch/outcome_batches.hpp"

using namespace outboxd;
using dispatch::OutcomeBatches;
using dispatch::PendingOutcome;
using dispatch::WriteFailure;
using Kind = store::Outcome::Kind;

namespace {

PendingOutcome done(std::int64_t id) { return {store::Outcome::done({id, 1}), "ns", "done"}; }

std::vector<std::int64_t> ids(const std::vector<PendingOutcome>& batch) {
    std::vector<std::int64_t> out;
    out.reserve(batch.size());
    for (const auto& p : batch) out.push_back(p.outcome.ref.id);
    return out;
}

OutcomeBatches with(std::int64_t count) {
    OutcomeBatches batches;
    for (std::int64_t id = 1; id <= count; ++id) batches.add(done(id));
    return batches;
}

}  // namespace

TEST_CASE("outcomes go out in order, at most a batch at a time", "[unit][dispatch]") {
    auto batches = with(5);
    CHECK(ids(batches.take(2)) == std::vector<std::int64_t>{1, 2});
    CHECK(ids(batches.take(10)) == std::vector<std::int64_t>{3, 4, 5});
    CHECK(batches.empty());
    CHECK(batches.take(10).empty());
}

TEST_CASE("a batch that failed for the connection is kept in front, in order, for a retry",
          "[unit][dispatch]") {
    auto batches = with(3);
    auto batch = batches.take(2);
    batches.add(done(4));  // arrived while the write was out
    const auto verdict = batches.failed(std::move(batch), WriteFailure::transient, "gone");
    CHECK(verdict.retry);
    CHECK(verdict.error == "gone");
    CHECK(ids(batches.take(10)) == std::vector<std::int64_t>{1, 2, 3, 4});
}

TEST_CASE(
    "a data error halves the batch until the poison outcome is alone; it becomes a "
    "dead letter and the rest land",
    "[unit][dispatch]") {
    auto batches = with(4);  // outcome 3 is poison
    auto batch = batches.take(10);
    auto verdict = batches.failed(std::move(batch), WriteFailure::data, "22P05");
    CHECK_FALSE(verdict.retry);
    CHECK(batches.isolating());

    CHECK(ids(batch = batches.take(10)) == std::vector<std::int64_t>{1, 2});
    CHECK(batches.landed(batch.size()).dead_lettered.empty());
    CHECK(ids(batch = batches.take(10)) == std::vector<std::int64_t>{3, 4});
    verdict = batches.failed(std::move(batch), WriteFailure::data, "22P05");
    CHECK(ids(batch = batches.take(10)) == std::vector<std::int64_t>{3});
    verdict = batches.failed(std::move(batch), WriteFailure::data, "22P05 again");
    CHECK(verdict.dead_lettered.empty());  // the isolation is not over: 4 is still suspect
    CHECK(ids(batch = batches.take(10)) == std::vector<std::int64_t>{4});
    verdict = batches.landed(batch.size());
    REQUIRE(verdict.dead_lettered.size() == 1);
    CHECK(verdict.dead_lettered[0].first == store::ClaimRef{3, 1});
    CHECK_FALSE(batches.isolating());

    // Outcome 3 comes back as a dead letter naming the error, first in line.
    batch = batches.take(10);
    REQUIRE(batch.size() == 1);
    CHECK(batch[0].outcome.kind == Kind::fail);
    CHECK(batch[0].outcome.ref == store::ClaimRef{3, 1});
    CHECK(batch[0].outcome.error == "outcome could not be recorded: 22P05 again");
    CHECK(batch[0].label == "failed");
    CHECK(batch[0].substitute);
}

TEST_CASE("a dead letter refused too is given up, not retried for ever", "[unit][dispatch]") {
    OutcomeBatches batches;
    batches.add({store::Outcome::fail({7, 1}, "x"), "ns", "failed", /*substitute=*/true});
    auto batch = batches.take(10);
    const auto verdict = batches.failed(std::move(batch), WriteFailure::data, "refused");
    REQUIRE(verdict.abandoned.size() == 1);
    CHECK(verdict.abandoned[0].first == store::ClaimRef{7, 1});
    CHECK(batches.empty());
    CHECK_FALSE(batches.isolating());
}

TEST_CASE("an unexplained error is retried, then isolated after kIsolateAfter failures in a row",
          "[unit][dispatch]") {
    auto batches = with(2);
    for (std::uint32_t i = 1; i < OutcomeBatches::kIsolateAfter; ++i) {
        const auto verdict = batches.failed(batches.take(10), WriteFailure::unexplained, "odd");
        CHECK(verdict.retry);
        CHECK_FALSE(batches.isolating());
    }
    const auto verdict = batches.failed(batches.take(10), WriteFailure::unexplained, "odd");
    CHECK_FALSE(verdict.retry);
    CHECK(batches.isolating());
}

TEST_CASE("when every outcome fails alone, not for its data, it is an outage: all are kept",
          "[unit][dispatch]") {
    auto batches = with(2);
    OutcomeBatches::Verdict verdict;
    for (std::uint32_t i = 0; i < OutcomeBatches::kIsolateAfter; ++i) {
        verdict = batches.failed(batches.take(10), WriteFailure::unexplained, "permission denied");
    }
    REQUIRE(batches.isolating());
    verdict = batches.failed(batches.take(10), WriteFailure::unexplained, "permission denied");
    CHECK_FALSE(verdict.retry);  // 1 alone, 2 still suspect
    verdict = batches.failed(batches.take(10), WriteFailure::unexplained, "permission denied");
    CHECK(verdict.retry);  // none landed, none for its data: a trigger or a permission
    CHECK(verdict.dead_lettered.empty());
    CHECK_FALSE(batches.isolating());
    const auto kept = batches.take(10);
    CHECK(ids(kept) == std::vector<std::int64_t>{1, 2});
    for (const auto& p : kept) CHECK(p.outcome.kind == Kind::done);  // unchanged
}

TEST_CASE("a success clears the count of unexplained failures", "[unit][dispatch]") {
    auto batches = with(3);
    CHECK(batches.failed(batches.take(1), WriteFailure::unexplained, "odd").retry);
    CHECK(batches.failed(batches.take(1), WriteFailure::unexplained, "odd").retry);
    (void)batches.landed(batches.take(1).size());
    CHECK(batches.failed(batches.take(1), WriteFailure::unexplained, "odd").retry);
    CHECK(batches.failed(batches.take(1), WriteFailure::unexplained, "odd").retry);
    CHECK_FALSE(batches.isolating());
}
