#pragma once

// Group commit of outcomes: the first outcome is written at once; outcomes arriving while
// a write is in flight are written together by the next one.
//
// Failures are told apart by their cause (the store's error types, from SQLSTATE):
// - the data (store::ValidationError: SQLSTATE classes 22, 23, 54): retrying the same batch
//   would fail forever, so it is split in halves until the outcome that fails is alone. That
//   outcome is
//   then recorded as a dead letter naming the error; if even that is refused, it is given up
//   (logged and counted) and its row stays claimed until the stale-claim backstop re-arms
//   it. Everything else in the batch lands.
// - anything else (connection lost, serialization, lock or statement timeout, a trigger
//   that raises): the batch is kept, in order, and retried with capped exponential backoff
//   until it lands; an outcome is never dropped. Meanwhile the writer is unhealthy and the
//   dispatcher stops claiming.
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

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/dispatch/db_lane.hpp"
#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/outbox_row.hpp"
#include "outboxd/util/retry_backoff.hpp"

namespace outboxd::dispatch {

class OutcomeWriter {
public:
    OutcomeWriter(boost::asio::any_io_executor loop, DbLane& lane, metrics::NodeMetrics& metrics,
                  std::size_t max_batch);
    ~OutcomeWriter();

    // `label` is the outcomes_total label counted once the write lands and applies (none
    // when empty).
    void record(store::Outcome outcome, std::string namespace_name, std::string label);

    [[nodiscard]] bool healthy() const { return failures_ == 0; }
    [[nodiscard]] bool idle() const { return buffer_.empty() && !writing_; }
    [[nodiscard]] std::uint64_t stale_answers() const { return stale_; }
    // Called (on the loop) whenever the writer becomes idle, and when it recovers.
    void on_settled(std::function<void()> callback) { on_settled_ = std::move(callback); }
    // Called (on the loop) when a write lands that put rows back in line at their old place
    // (release, retry without delay): they are behind where claims read on.
    void on_rearmed(std::function<void()> callback) { on_rearmed_ = std::move(callback); }
    // Rows per namespace that left `claimed` by writes landed since the last call.
    [[nodiscard]] std::map<std::string, std::int64_t> take_settled() {
        return std::exchange(settled_, {});
    }

private:
    struct Pending {
        store::Outcome outcome;
        std::string namespace_name;
        std::string label;
        bool substitute = false;  // a dead letter standing in for an outcome the database refused
    };
    enum class Failure { transient, deterministic };

    void flush();
    void finish(std::vector<Pending> batch, std::vector<bool> applied);
    void fail(std::vector<Pending> batch, Failure failure, const std::string& error);
    void isolate(std::vector<Pending> batch, const std::string& error);
    void put_back(std::vector<Pending> batch);

    boost::asio::any_io_executor loop_;
    DbLane& lane_;
    metrics::NodeMetrics& metrics_;
    std::size_t max_batch_;
    std::deque<Pending> buffer_;
    bool writing_ = false;
    std::uint32_t failures_ = 0;  // consecutive transient failures
    util::RetryBackoff retry_backoff_;
    // After a deterministic failure: the first `suspect_` outcomes of the buffer hold the
    // one the database refuses, and go in batches of at most `split_` until it is found.
    std::size_t suspect_ = 0;
    std::size_t split_ = 0;
    std::uint64_t stale_ = 0;
    boost::asio::steady_timer retry_timer_;
    std::function<void()> on_settled_;
    std::function<void()> on_rearmed_;
    std::map<std::string, std::int64_t> settled_;
    // Jobs still queued on the lane when we are destroyed must not call back into us.
    std::shared_ptr<OutcomeWriter*> alive_;
};

}  // namespace outboxd::dispatch
