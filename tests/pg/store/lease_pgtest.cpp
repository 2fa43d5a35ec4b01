// Durable deadlines of claims (README, "Task policy and heartbeats"): the stale-claim
// backstop honours a lease written for the very claim it names, and nothing else; heartbeats
// record their time and progress.

#include <catch2/catch.hpp>

#include "store_fixture.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using store::LeaseWrite;
using store::Status;
using test::new_row;

namespace {

store::ClaimRef ref_of(const store::OutboxRow& row) { return {row.id, row.claim_token}; }

}  // namespace

TEST_CASE("the stale-claim backstop honours a lease of the claim, and only of that claim",
          "[pg][store][heartbeat]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0), new_row("wf", 1), new_row("wf", 2)});
    const auto claimed = f.store.claim(f.owner, 10);
    REQUIRE(claimed.size() == 3);
    for (const auto& row : claimed) f.age_claim(row.dispatch_key, 120'000);
    const auto& leased = claimed[0];
    const auto& stale_lease = claimed[1];
    const auto& plain = claimed[2];

    // A lease running a minute more keeps the first claim; the second's lease names another
    // claim (an earlier one's token) and means nothing.
    const std::vector leases{
        LeaseWrite{ref_of(leased), 60s, true, R"({"step": 3})"},
        LeaseWrite{{stale_lease.id, stale_lease.claim_token - 1}, 60s, false, std::nullopt}};
    CHECK(f.store.outcomes.write_leases(leases) == 1);
    const auto rearmed = f.store.maintenance.rearm_stale_claimed(f.owner, 60s, 10, 1s);
    REQUIRE(rearmed.size() == 2);
    CHECK(f.status_of(leased.dispatch_key) == Status::claimed);
    CHECK(f.status_of(stale_lease.dispatch_key) == Status::pending);
    CHECK(f.status_of(plain.dispatch_key) == Status::pending);

    // The heartbeat's time and progress are shown with the row.
    const auto shown = f.store.find(leased.dispatch_key);
    REQUIRE(shown);
    REQUIRE(shown->heartbeat_at);
    CHECK(shown->progress_json == R"({"step": 3})");

    // A lease that ended more than the grace ago re-arms, however young the claim looks.
    f.db.exec(
        "UPDATE outbox SET claimed_at = now(), lease_expires_at = now() - interval '2 s'"
        " WHERE dispatch_key = '" +
        leased.dispatch_key + "'");
    CHECK(f.store.maintenance.rearm_stale_claimed(f.owner, 60s, 10, 1s).size() == 1);
    CHECK(f.status_of(leased.dispatch_key) == Status::pending);

    // Claimed again: the old lease (an earlier token) is ignored; the claim's age counts.
    const auto again = f.store.claim(f.owner, 1);
    REQUIRE(again.size() == 1);
    CHECK(f.store.maintenance.rearm_stale_claimed(f.owner, 60s, 10, 1s).empty());
    f.age_claim(again[0].dispatch_key, 120'000);
    CHECK(f.store.maintenance.rearm_stale_claimed(f.owner, 60s, 10, 1s).size() == 1);
}

TEST_CASE("a lease write applies only while its claim holds, and keeps progress it lacks",
          "[pg][store][heartbeat]") {
    test::StoreFixture f;
    f.store.append(std::vector{new_row("wf", 0)});
    const auto claimed = f.store.claim(f.owner, 1);
    REQUIRE(claimed.size() == 1);
    const auto ref = ref_of(claimed[0]);
    CHECK(f.store.outcomes.write_leases(std::vector{LeaseWrite{ref, 30s, true, R"([1,2])"}}) == 1);
    // No new progress: the last one stays; no heartbeat: its time stays.
    const auto before = f.store.find("wf:0");
    CHECK(f.store.outcomes.write_leases(std::vector{LeaseWrite{ref, 30s, false, std::nullopt}}) ==
          1);
    const auto after = f.store.find("wf:0");
    REQUIRE(after);
    CHECK(after->progress_json == "[1, 2]");
    CHECK(after->heartbeat_at == before->heartbeat_at);
    CHECK(f.count("lease_expires_at > now() + interval '20 s'") == 1);

    REQUIRE(f.store.complete(ref));
    CHECK(f.store.outcomes.write_leases(std::vector{LeaseWrite{ref, 30s, true, R"(9)"}}) == 0);
    // The progress is kept after the task ends.
    CHECK(f.store.find("wf:0")->progress_json == "[1, 2]");
    CHECK(f.store.outcomes.write_leases({}) == 0);
}
