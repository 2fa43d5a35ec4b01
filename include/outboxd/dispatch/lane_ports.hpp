#pragma once

// The dispatcher's ports (ports.hpp) over a node's lanes: rounds on the claims lanes, outcomes
// and durable deadlines on the outcomes lane.
//
// Thread affinity: the loop thread; the SQL runs on the lanes.

#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/dispatch/lease_writer.hpp"
#include "outboxd/dispatch/outcome_writer.hpp"
#include "outboxd/dispatch/ports.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/lanes.hpp"

namespace outboxd::dispatch {

// Rounds on `rounds`, claims apart on a lane of their own (`apart`), so that a quiet
// tenant's claim never queues behind a busy one's round. `database` names them in the log.
class LaneRounds final : public RoundRunner {
public:
    LaneRounds(boost::asio::any_io_executor loop, store::ClaimLane& rounds, store::ClaimLane& apart,
               std::string database)
        : loop_(std::move(loop)), rounds_(rounds), apart_(apart), database_(std::move(database)) {}

    bool round(ClaimRequest request, std::shared_ptr<ClaimerState> state,
               std::optional<ClaimMarks::Release> release, std::weak_ptr<const void> owner,
               Done done) override;
    bool apart(ClaimRequest request, std::weak_ptr<const void> owner, Done done) override;
    // Connects the claims-apart lane ahead of its first claim (which is all about latency);
    // a failure is left to that claim.
    void prepare_apart() override;

private:
    boost::asio::any_io_executor loop_;
    store::ClaimLane& rounds_;
    store::ClaimLane& apart_;
    std::string database_;
};

class LaneTaskWrites final : public TaskWrites {
public:
    LaneTaskWrites(const boost::asio::any_io_executor& loop, store::OutcomeLane& lane,
                   metrics::DatabaseMetrics& metrics, std::size_t max_outcome_batch)
        : outcomes_(loop, lane, metrics, max_outcome_batch), leases_(loop, lane, metrics) {}

    void record(store::Outcome outcome, std::string namespace_name, std::string label) override {
        outcomes_.record(std::move(outcome), std::move(namespace_name), std::move(label));
    }
    void ask_lease(store::LeaseWrite lease) override { leases_.ask(std::move(lease)); }
    void forget_lease(const store::ClaimRef& ref) override { leases_.forget(ref); }
    [[nodiscard]] bool healthy() const override { return outcomes_.healthy(); }
    [[nodiscard]] bool idle() const override { return outcomes_.idle(); }
    [[nodiscard]] std::map<std::string, std::int64_t> take_settled() override {
        return outcomes_.take_settled();
    }
    void on_events(Events events) override;

    [[nodiscard]] const OutcomeWriter& outcomes() const { return outcomes_; }

private:
    OutcomeWriter outcomes_;
    LeaseWriter leases_;
};

}  // namespace outboxd::dispatch
