#pragma once

// Durable deadlines and heartbeats of outstanding tasks (README, "Task policy and
// heartbeats"), written in batches: whatever was asked for since the last write goes in one
// statement (a few per second however many tasks heartbeat), at most `max_batch` rows each.
//
// A lease asked for again before it is written replaces the earlier one (the latest
// deadline wins; new progress is kept over none), so what waits is bounded by the tasks
// outstanding. A failed write is kept and retried with backoff; a write that no longer
// matters (its task ended) is fenced by the claim token in the statement.
//
// Thread affinity: the loop thread. Writes run on `lane`.

#include <chrono>
#include <cstdint>
#include <map>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/store/outcome_store.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/util/retry_backoff.hpp"

namespace outboxd::dispatch {

class LeaseWriter {
public:
    static constexpr std::chrono::milliseconds kFlushEvery{500};
    static constexpr std::size_t kMaxBatch = 5000;

    LeaseWriter(boost::asio::any_io_executor loop, store::OutcomeLane& lane,
                metrics::DatabaseMetrics& metrics,
                std::chrono::milliseconds flush_every = kFlushEvery);

    void ask(store::LeaseWrite lease);
    // The task of `ref` ended: a lease still waiting for it need not be written.
    void forget(const store::ClaimRef& ref) { pending_.erase({ref.id, ref.token}); }

    [[nodiscard]] std::size_t waiting() const { return pending_.size(); }

private:
    void arm(std::chrono::milliseconds after);
    void flush();

    boost::asio::any_io_executor loop_;
    store::OutcomeLane& lane_;
    metrics::DatabaseMetrics& metrics_;
    std::chrono::milliseconds flush_every_;
    std::map<std::pair<std::int64_t, std::int64_t>, store::LeaseWrite> pending_;
    bool armed_ = false;
    bool writing_ = false;
    util::RetryBackoff retry_backoff_;
    boost::asio::steady_timer timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
