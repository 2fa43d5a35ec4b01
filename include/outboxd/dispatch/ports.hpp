#pragma once

// What the dispatcher needs of its database, as two ports, so that the coordinator is the
// same in a node and in a unit test: a node wires them to its lanes (LaneRounds,
// LaneTaskWrites in dispatch/lane_ports.hpp), a unit test to a script in simulated time.
//
// Thread affinity: the loop thread; results come back on it.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "outboxd/dispatch/claim_marks.hpp"
#include "outboxd/dispatch/claim_round.hpp"
#include "outboxd/store/db_lane.hpp"
#include "outboxd/store/outcome_store.hpp"

namespace outboxd::dispatch {

// Where claim rounds run.
class RoundRunner {
public:
    using Done = std::function<void(store::LaneResult<ClaimRoundResult>)>;
    virtual ~RoundRunner() = default;

    // Runs a round (claim_round) over `state`, after releasing what `release` names; `done`
    // runs on the loop while `owner` lives. False when it cannot be queued (nothing runs).
    [[nodiscard]] virtual bool round(ClaimRequest request, std::shared_ptr<ClaimerState> state,
                                     std::optional<ClaimMarks::Release> release,
                                     std::weak_ptr<const void> owner, Done done) = 0;
    // Runs a claim apart (claim_apart) beside the rounds, as round() does.
    [[nodiscard]] virtual bool apart(ClaimRequest request, std::weak_ptr<const void> owner,
                                     Done done) = 0;
    // Gets ready for a claim apart ahead of the first (a connection), if it can.
    virtual void prepare_apart() {}
};

// Where the outcomes and durable deadlines of tasks are written, in batches, and what comes
// of the writes.
class TaskWrites {
public:
    using QueueKey = std::pair<std::string, std::string>;  // (namespace, task_queue)
    struct Events {
        // The writer became idle, or recovered.
        std::function<void()> settled;
        // A write landed that put rows back in line at their old place (release, retry
        // without delay): they are behind where claims read on.
        std::function<void()> rearmed;
        // A write landed that let waiting rows of ordered workflows go in these queues.
        std::function<void(const std::vector<QueueKey>&)> let_go;
    };
    virtual ~TaskWrites() = default;

    // `label` is the outcomes_total label counted once the write lands and applies (none
    // when empty).
    virtual void record(store::Outcome outcome, std::string namespace_name, std::string label) = 0;
    virtual void ask_lease(store::LeaseWrite lease) = 0;
    // The task of `ref` ended: a lease still waiting for it need not be written.
    virtual void forget_lease(const store::ClaimRef& ref) = 0;
    // Whether outcomes are being written (a node that cannot write them stops claiming).
    [[nodiscard]] virtual bool healthy() const = 0;
    // Nothing waits to be written.
    [[nodiscard]] virtual bool idle() const = 0;
    // Rows per namespace that left `claimed` by writes landed since the last call.
    [[nodiscard]] virtual std::map<std::string, std::int64_t> take_settled() = 0;
    virtual void on_events(Events events) = 0;
};

}  // namespace outboxd::dispatch
