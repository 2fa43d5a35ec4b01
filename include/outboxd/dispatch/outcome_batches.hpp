#pragma once

// The outcomes waiting to be written, and what a write's result makes of them (the policy
// OutcomeWriter describes): which outcomes go in the next write; after a failure, whether
// the batch is kept for a retry (an outage) or halved until each outcome that fails is
// alone; and, once an isolation is over, which refused outcomes become dead letters.
//
// Pure: no I/O, no clock, no logging; the writer acts on the verdicts. One owner.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::dispatch {

struct PendingOutcome {
    store::Outcome outcome;
    std::string namespace_name;
    std::string label;        // the outcomes_total label once it lands (none when empty)
    bool substitute = false;  // a dead letter standing in for an outcome the database refused
};

// Why a write failed, from the store's error types.
enum class WriteFailure {
    transient,    // a lost connection or contention: whether it landed is unknown
    data,         // the data: the same batch would fail the same way
    unexplained,  // anything else
};

class OutcomeBatches {
public:
    // An unexplained failure of the same batch this many times in a row is looked into like
    // a data error.
    static constexpr std::uint32_t kIsolateAfter = 3;
    // How much of the database's refusal a substitute dead letter keeps.
    static constexpr std::size_t kRefusalBytes = 500;

    // What the writer does next.
    struct Verdict {
        // Everything is kept, in order, in front: retry after a backoff (the writer is
        // unhealthy meanwhile). `error` says why.
        bool retry = false;
        std::string error;
        // Outcomes the database refused alone, now queued as dead letters (with the error).
        std::vector<std::pair<store::ClaimRef, std::string>> dead_lettered;
        // Substitute dead letters refused too: given up (their rows stay claimed until the
        // stale-claim backstop re-arms them).
        std::vector<std::pair<store::ClaimRef, std::string>> abandoned;
    };

    void add(PendingOutcome outcome) { queue_.push_back(std::move(outcome)); }
    [[nodiscard]] bool empty() const { return queue_.empty(); }
    [[nodiscard]] std::size_t size() const { return queue_.size(); }
    // Whether a failing batch is being halved.
    [[nodiscard]] bool isolating() const { return isolation_.suspect > 0; }

    // The next write: up to `max_batch` outcomes from the front, fewer while a failing batch
    // is halved.
    [[nodiscard]] std::vector<PendingOutcome> take(std::size_t max_batch);
    // The write of `count` outcomes (the last taken) landed.
    [[nodiscard]] Verdict landed(std::size_t count);
    // The write of `batch` failed.
    [[nodiscard]] Verdict failed(std::vector<PendingOutcome> batch, WriteFailure failure,
                                 const std::string& error);

private:
    struct Isolation {
        std::size_t suspect = 0;  // the first `suspect` outcomes of the queue are in it
        std::size_t split = 0;    // the size they are written in meanwhile
        std::size_t landed = 0;   // how many of them landed
        bool data = false;        // some failure was the data's
        std::vector<std::pair<PendingOutcome, std::string>> refused;  // failed alone
    };

    Verdict keep(std::vector<PendingOutcome> batch, const std::string& error);
    Verdict isolate(std::vector<PendingOutcome> batch, WriteFailure failure,
                    const std::string& error);
    // The isolation is over: its refused outcomes become dead letters, or are kept.
    void conclude(Verdict& verdict);
    void put_back(std::vector<PendingOutcome> batch);

    std::deque<PendingOutcome> queue_;
    Isolation isolation_;
    std::uint32_t unexplained_ = 0;  // unexplained failures in a row
};

}  // namespace outboxd::dispatch
