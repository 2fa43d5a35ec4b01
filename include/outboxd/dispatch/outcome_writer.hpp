#pragma once

// Group commit of outcomes: the first outcome is written at once; outcomes arriving while
// a write is in flight are written together by the next one.
//
// Failures are told apart by their cause (the store's error types, from SQLSTATE):
// - a lost connection or contention (store::UnavailableError, store::ConflictError): the
//   batch is kept, in order, and retried with capped exponential backoff until it lands.
//   Meanwhile the writer is unhealthy and the dispatcher stops claiming.
// - the data (store::ValidationError: SQLSTATE classes 22, 23, 54), or any other error
//   that fails the same batch OutcomeBatches::kIsolateAfter times in a row: the batch is split in
//   halves until each outcome that fails is alone, the rest landing on the way. If some landed, or
//   the data was at fault, each outcome that failed alone is recorded as a dead letter
//   naming the error (if even that is refused, it is given up, logged and counted, and its
//   row stays claimed until the stale-claim backstop re-arms it). If none landed and the
//   data was not at fault, the database refuses these writes as such (a trigger, a
//   permission): they are kept and retried as in an outage.
// No outcome is dropped silently, and none is retried for ever as the same failing batch.
//
// Thread affinity: the loop thread. Writes run on `lane`.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/dispatch/outcome_batches.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/util/retry_backoff.hpp"

namespace outboxd::dispatch {

class OutcomeWriter {
public:
    OutcomeWriter(boost::asio::any_io_executor loop, store::OutcomeLane& lane,
                  metrics::DatabaseMetrics& metrics, std::size_t max_batch);

    // `label` is the outcomes_total label counted once the write lands and applies (none
    // when empty).
    void record(store::Outcome outcome, std::string namespace_name, std::string label);

    [[nodiscard]] bool healthy() const { return failures_.failures() == 0; }
    [[nodiscard]] bool idle() const { return batches_.empty() && !writing_; }
    [[nodiscard]] std::uint64_t stale_answers() const { return stale_; }
    // Called (on the loop) whenever the writer becomes idle, and when it recovers.
    void on_settled(std::function<void()> callback) { on_settled_ = std::move(callback); }
    // Called (on the loop) when a write lands that put rows back in line at their old place
    // (release, retry without delay): they are behind where claims read on.
    void on_rearmed(std::function<void()> callback) { on_rearmed_ = std::move(callback); }
    // A write landed that let waiting rows of ordered workflows go, in these (namespace,
    // task_queue) pairs (their routes may have nothing else due: claim them again).
    using QueueKey = std::pair<std::string, std::string>;
    void on_let_go(std::function<void(const std::vector<QueueKey>&)> callback) {
        on_let_go_ = std::move(callback);
    }
    // Rows per namespace that left `claimed` by writes landed since the last call.
    [[nodiscard]] std::map<std::string, std::int64_t> take_settled() {
        return std::exchange(settled_, {});
    }

private:
    void flush();
    void finish(std::vector<PendingOutcome> batch, std::vector<bool> applied);
    void fail(std::vector<PendingOutcome> batch, WriteFailure failure, const std::string& error);
    // Logs and counts what a verdict gave up on or turned into dead letters; schedules the
    // retry it asks for.
    void act(const OutcomeBatches::Verdict& verdict);
    void retry_later(const std::string& error);

    boost::asio::any_io_executor loop_;
    store::OutcomeLane& lane_;
    metrics::DatabaseMetrics& metrics_;
    std::size_t max_batch_;
    OutcomeBatches batches_;
    bool writing_ = false;
    bool retry_pending_ = false;  // a failed write waits for its backoff: nothing starts meanwhile
    util::FailureRun failures_;   // writes failed and kept for a retry, since the last success
    util::RetryBackoff retry_backoff_;
    std::uint64_t stale_ = 0;
    boost::asio::steady_timer retry_timer_;
    std::function<void()> on_settled_;
    std::function<void()> on_rearmed_;
    std::function<void(const std::vector<QueueKey>&)> on_let_go_;
    std::map<std::string, std::int64_t> settled_;
    // Jobs still queued on the lane when we are destroyed must not call back into us.
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
