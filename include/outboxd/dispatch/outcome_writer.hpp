#pragma once

// Group commit of outcomes: the first outcome is written at once; outcomes arriving while
// a write is in flight are written together by the next one. A failed write keeps its
// outcomes, in order, and retries them with backoff until they land: an outcome is never
// dropped. While writes fail the writer is unhealthy, and the dispatcher stops claiming.
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
    };

    void flush();
    void finish(std::vector<Pending> batch, std::vector<bool> applied);
    void fail(std::vector<Pending> batch, const std::string& error);

    boost::asio::any_io_executor loop_;
    DbLane& lane_;
    metrics::NodeMetrics& metrics_;
    std::size_t max_batch_;
    std::deque<Pending> buffer_;
    bool writing_ = false;
    std::uint32_t failures_ = 0;
    std::uint64_t stale_ = 0;
    boost::asio::steady_timer retry_timer_;
    std::function<void()> on_settled_;
    std::function<void()> on_rearmed_;
    std::map<std::string, std::int64_t> settled_;
    // Jobs still queued on the lane when we are destroyed must not call back into us.
    std::shared_ptr<OutcomeWriter*> alive_;
};

}  // namespace outboxd::dispatch
