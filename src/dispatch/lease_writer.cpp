#include "outboxd/dispatch/lease_writer.hpp"

#include <memory>
#include <random>
#include <vector>

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

LeaseWriter::LeaseWriter(boost::asio::any_io_executor loop, store::OutcomeLane& lane,
                         metrics::DatabaseMetrics& metrics, std::chrono::milliseconds flush_every)
    : loop_(std::move(loop)),
      lane_(lane),
      metrics_(metrics),
      flush_every_(flush_every),
      retry_backoff_(std::chrono::milliseconds{100}, std::chrono::milliseconds{5000},
                     std::random_device{}()),
      timer_(loop_) {}

void LeaseWriter::ask(store::LeaseWrite lease) {
    const auto key = std::make_pair(lease.ref.id, lease.ref.token);
    if (auto it = pending_.find(key); it != pending_.end()) {
        // Merged: the newest deadline, any heartbeat, the newest progress.
        lease.beat = lease.beat || it->second.beat;
        if (!lease.progress_json) lease.progress_json = std::move(it->second.progress_json);
        it->second = std::move(lease);
    } else {
        pending_.emplace(key, std::move(lease));
    }
    arm(flush_every_);
}

void LeaseWriter::arm(std::chrono::milliseconds after) {
    if (armed_ || writing_) return;
    armed_ = true;
    timer_.expires_after(after);
    timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired()) return;
        armed_ = false;
        flush();
    });
}

void LeaseWriter::flush() {
    if (writing_ || pending_.empty()) return;
    writing_ = true;
    auto batch = std::make_shared<std::vector<store::LeaseWrite>>();
    batch->reserve(std::min(pending_.size(), kMaxBatch));
    while (!pending_.empty() && batch->size() < kMaxBatch) {
        batch->push_back(std::move(pending_.begin()->second));
        pending_.erase(pending_.begin());
    }
    const auto failed = [this, batch](const std::string& error) {
        // Kept, unless a newer one for the same task came meanwhile.
        for (auto& lease : *batch) {
            const auto key = std::make_pair(lease.ref.id, lease.ref.token);
            pending_.try_emplace(key, std::move(lease));
        }
        writing_ = false;
        const auto delay = retry_backoff_.next();
        spdlog::warn("event=lease_write_failed database={} rows={} retry_in_ms={} error=\"{}\"",
                     metrics_.database(), batch->size(), delay.count(), util::log_safe(error));
        arm(delay);
    };
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [batch](store::OutcomeStores& db) { return db.outcomes.write_leases(*batch); },
        [this, failed](const store::LaneResult<std::size_t>& done) {
            if (!done.ok()) return failed(done.error);
            metrics_.lease_statements_total.Increment();
            metrics_.lease_rows_total.Increment(static_cast<double>(done.value));
            retry_backoff_.reset();
            writing_ = false;
            if (!pending_.empty())
                arm(pending_.size() >= kMaxBatch ? std::chrono::milliseconds{0} : flush_every_);
        });
    if (!queued) failed("the outcomes lane is full");
}

}  // namespace outboxd::dispatch
