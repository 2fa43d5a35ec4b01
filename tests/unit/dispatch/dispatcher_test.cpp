// The coordinator in simulated time: its ports are scripts (no database), its clock a
// variable the test moves, and what its timers would call is called by the test. Each case
// runs in milliseconds however long the time it simulates.

#include <catch2/catch.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <prometheus/registry.h>

#include "memory_sink.hpp"
#include "outboxd/dispatch/dispatcher.hpp"
#include "outboxd/metrics/node_metrics.hpp"

using namespace outboxd;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const char* const kNoDatabase = "postgresql://127.0.0.1:1/none";

// Claims as the test scripts them: each round or claim apart takes the next result, or finds
// nothing.
class ScriptedRounds final : public dispatch::RoundRunner {
public:
    explicit ScriptedRounds(boost::asio::io_context& ioc) : ioc_(ioc) {}

    bool round(dispatch::ClaimRequest request, std::shared_ptr<dispatch::ClaimerState>,
               std::optional<dispatch::ClaimMarks::Release>, std::weak_ptr<const void> owner,
               Done done) override {
        auto result = next();
        result.value.parts = request.parts;
        requests.push_back(std::move(request));
        return answer(std::move(result), std::move(owner), std::move(done));
    }
    bool apart(dispatch::ClaimRequest request, std::weak_ptr<const void> owner,
               Done done) override {
        aparts.push_back(std::move(request));
        return answer(next(), std::move(owner), std::move(done));
    }

    std::deque<store::LaneResult<dispatch::ClaimRoundResult>> script;
    std::vector<dispatch::ClaimRequest> requests;
    std::vector<dispatch::ClaimRequest> aparts;

private:
    store::LaneResult<dispatch::ClaimRoundResult> next() {
        if (script.empty()) return {};
        auto result = std::move(script.front());
        script.pop_front();
        return result;
    }
    bool answer(store::LaneResult<dispatch::ClaimRoundResult> result,
                std::weak_ptr<const void> owner, Done done) {
        boost::asio::post(ioc_, [result = std::move(result), owner = std::move(owner),
                                 done = std::move(done)]() mutable {
            if (!owner.expired()) done(std::move(result));
        });
        return true;
    }
    boost::asio::io_context& ioc_;
};

// Writes that land at once, kept for the test to read.
class RecordedWrites final : public dispatch::TaskWrites {
public:
    struct Recorded {
        store::Outcome outcome;
        std::string label;
    };
    void record(store::Outcome outcome, std::string, std::string label) override {
        outcomes.push_back({std::move(outcome), std::move(label)});
    }
    void ask_lease(store::LeaseWrite lease) override { leases.push_back(std::move(lease)); }
    void forget_lease(const store::ClaimRef&) override {}
    [[nodiscard]] bool healthy() const override { return true; }
    [[nodiscard]] bool idle() const override { return true; }
    [[nodiscard]] std::map<std::string, std::int64_t> take_settled() override { return {}; }
    void on_events(Events given) override { events = std::move(given); }

    std::vector<Recorded> outcomes;
    std::vector<store::LeaseWrite> leases;
    Events events;
};

store::OutboxRow claimed_row(std::int64_t id, std::int64_t token) {
    store::OutboxRow row;
    row.id = id;
    row.claim_token = token;
    row.dispatch_key = "w-" + std::to_string(id) + ":0";
    row.workflow_id = "w-" + std::to_string(id);
    row.namespace_name = "default";
    row.task_queue = "default";
    row.activity_type = "charge";
    row.status = store::Status::claimed;
    return row;
}

const store::ClaimScope kRoute{"default", "default", std::nullopt, {"charge"}};

struct Coordinator {
    Coordinator() {
        namespaces.set("default", 10000, {});  // known: claims may start
        dispatch::DispatchSettings settings;
        settings.task_timeout = 30s;
        settings.backoff = {std::chrono::milliseconds{1000}, 2.0, std::chrono::milliseconds{60000}};
        settings.max_attempts = 3;
        dispatcher = std::make_unique<dispatch::Dispatcher>(
            ioc.get_executor(), dispatch::DispatchPorts{rounds, writes}, registry, namespaces,
            metrics, settings, [] { return store::Owner{"node-a/boot-1"}; },
            [this] { return now; });
    }
    ~Coordinator() {
        dispatcher->stop();
        ioc.poll();
    }

    std::shared_ptr<test::MemorySink> attach(const std::string& session, std::int32_t credit) {
        auto sink = std::make_shared<test::MemorySink>();
        sinks::SinkProfile profile;
        profile.name = session;
        profile.activity_types = {"charge"};
        profile.credit = credit;
        registry.add(session, std::move(profile), sink);
        dispatcher->sink_attached();
        return sink;
    }
    // Runs what is posted (sweeps, round results) until nothing is left.
    void settle() {
        ioc.restart();
        ioc.poll();
    }
    void round_claims(std::vector<store::OutboxRow> rows) {
        store::LaneResult<dispatch::ClaimRoundResult> result;
        result.value.found = {kRoute};
        result.value.rows = std::move(rows);
        rounds.script.push_back(std::move(result));
    }

    Clock::time_point now{std::chrono::hours{1000}};
    boost::asio::io_context ioc{1};
    prometheus::Registry prometheus_registry;
    metrics::NodeMetrics node_metrics{prometheus_registry};
    metrics::DatabaseMetrics metrics{node_metrics, "default"};
    store::AdminLane api_lane{{.name = "api"}, kNoDatabase};  // never used: settings are set
    dispatch::NamespaceCache namespaces{ioc.get_executor(), api_lane, 10000, 1s};
    worker::WorkerRegistry registry;
    ScriptedRounds rounds{ioc};
    RecordedWrites writes;
    std::unique_ptr<dispatch::Dispatcher> dispatcher;
};

}  // namespace

TEST_CASE("a task past its timeout is retried after its backoff and gives its credit back",
          "[unit][dispatch]") {
    Coordinator c;
    auto sink = c.attach("s1", 2);
    c.round_claims({claimed_row(1, 7), claimed_row(2, 7)});
    c.settle();
    REQUIRE(sink->tasks().size() == 2);
    CHECK(c.registry.find("s1")->outstanding() == 2);
    CHECK(c.dispatcher->outstanding() == 2);

    c.now += 29s;  // within the timeout: nothing happens
    c.dispatcher->expire_timeouts();
    CHECK(c.writes.outcomes.empty());

    c.now += 2s;
    c.dispatcher->expire_timeouts();
    REQUIRE(c.writes.outcomes.size() == 2);
    for (const auto& recorded : c.writes.outcomes) {
        CHECK(recorded.label == "retry");
        CHECK(recorded.outcome.kind == store::Outcome::Kind::retry);
        CHECK(recorded.outcome.delay == 1000ms);  // the first attempt's backoff
        CHECK(recorded.outcome.error == "task timed out after 30000 ms");
    }
    CHECK(c.registry.find("s1")->outstanding() == 0);
    CHECK(c.dispatcher->outstanding() == 0);
    // A late answer to a timed-out task changes nothing.
    CHECK(c.dispatcher->on_complete("s1", sink->tasks()[0]["task_id"].get<std::string>()) ==
          sinks::Answer::unknown_task);
}

TEST_CASE("a quiet database probes at every fourth poll until something happens",
          "[unit][dispatch]") {
    Coordinator c;
    c.attach("s1", 4);
    c.settle();
    const auto polls = [&c](int n) {
        const auto before = c.rounds.requests.size();
        for (int i = 0; i < n; ++i) {
            c.now += 500ms;  // the poll interval
            c.dispatcher->poll();
            c.settle();
        }
        return c.rounds.requests.size() - before;
    };
    CHECK(polls(dispatch::Dispatcher::kQuietPolls) == dispatch::Dispatcher::kQuietPolls);
    CHECK(polls(20) == 5);          // quiet now
    c.dispatcher->woken({}, true);  // a wake (new rows somewhere): every poll probes again
    c.settle();
    CHECK(polls(8) == 8);
    CHECK(polls(dispatch::Dispatcher::kQuietPolls) == 14);  // quiet from the 21st on

    // A claimed row is activity too, and so is a task out.
    c.round_claims({claimed_row(1, 7)});
    CHECK(polls(4) == 1);  // the fourth poll's round claims it
    CHECK(c.dispatcher->outstanding() == 1);
    CHECK(polls(40) == 40);
}

TEST_CASE("a failed round backs off: triggers start no round until its backoff is over",
          "[unit][dispatch]") {
    Coordinator c;
    store::LaneResult<dispatch::ClaimRoundResult> failed;
    failed.error = "the database cannot be reached";
    c.rounds.script.push_back(failed);
    c.attach("s1", 4);
    c.settle();
    REQUIRE(c.rounds.requests.size() == 1);

    // Triggers while the backoff runs: no round.
    for (int i = 0; i < 10; ++i) {
        c.now += 1ms;
        c.dispatcher->request_sweep();
        c.settle();
    }
    CHECK(c.rounds.requests.size() == 1);

    // The backoff is capped at 5 s: after it, a trigger claims again, and looks everywhere
    // (what the failed round was to probe is unknown).
    c.now += 6s;
    c.dispatcher->request_sweep();
    c.settle();
    REQUIRE(c.rounds.requests.size() == 2);
    CHECK(c.rounds.requests[1].probe.size() == 1);
}

TEST_CASE("a route a rate limit held back waits for its wait, with no round meanwhile",
          "[unit][dispatch][controls]") {
    Coordinator c;
    store::LaneResult<dispatch::ClaimRoundResult> limited;
    limited.value.found = {kRoute};
    limited.value.rows = {claimed_row(1, 3)};
    limited.value.held = {{kRoute, 200ms, false}};
    c.rounds.script.push_back(limited);
    auto sink = c.attach("s1", 10);
    c.settle();
    REQUIRE(c.rounds.requests.size() == 1);
    REQUIRE(sink->tasks().size() == 1);

    // Answers and triggers within the wait start no round: the route is held.
    REQUIRE(c.dispatcher->on_complete("s1", sink->tasks()[0]["task_id"].get<std::string>()) ==
            sinks::Answer::accepted);
    c.now += 150ms;
    c.dispatcher->request_sweep();
    c.settle();
    CHECK(c.rounds.requests.size() == 1);

    c.now += 60ms;
    c.dispatcher->request_sweep();
    c.settle();
    CHECK(c.rounds.requests.size() == 2);
}

TEST_CASE("a heartbeat keeps a heartbeating task out past its heartbeat timeout",
          "[unit][dispatch]") {
    Coordinator c;
    store::DeliveryControls controls;
    store::ActivityPolicy beating;
    beating.heartbeat_timeout_ms = 2000;
    controls.activities["charge"] = beating;
    c.namespaces.set("default", 10000, {}, controls);
    auto sink = c.attach("s1", 1);
    c.round_claims({claimed_row(5, 9)});
    c.settle();
    REQUIRE(sink->tasks().size() == 1);
    const auto task_id = sink->tasks()[0]["task_id"].get<std::string>();
    REQUIRE(c.writes.leases.size() == 1);  // a durable deadline of its own

    for (int i = 0; i < 5; ++i) {
        c.now += 1500ms;
        CHECK(c.dispatcher->on_heartbeat("s1", task_id, std::nullopt) == sinks::Answer::accepted);
        c.dispatcher->expire_timeouts();
    }
    CHECK(c.writes.outcomes.empty());  // 7.5 s out, alive all along

    c.now += 2100ms;  // silent past the heartbeat timeout
    c.dispatcher->expire_timeouts();
    REQUIRE(c.writes.outcomes.size() == 1);
    CHECK(c.writes.outcomes[0].outcome.error == "no heartbeat for 2000 ms");
}

TEST_CASE("a drain waits for the tasks out, then reports drained once", "[unit][dispatch]") {
    Coordinator c;
    auto sink = c.attach("s1", 2);
    c.round_claims({claimed_row(1, 4)});
    c.settle();
    REQUIRE(sink->tasks().size() == 1);
    int drained = 0;
    c.dispatcher->drain([&] { ++drained; });
    c.settle();
    CHECK(drained == 0);
    CHECK(c.registry.find("s1")->retired());
    REQUIRE(c.dispatcher->on_complete("s1", sink->tasks()[0]["task_id"].get<std::string>()) ==
            sinks::Answer::accepted);
    c.settle();
    CHECK(drained == 1);
    REQUIRE(c.writes.outcomes.size() == 1);
    CHECK(c.writes.outcomes[0].label == "done");
}
