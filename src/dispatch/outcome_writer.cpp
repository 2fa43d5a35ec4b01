#include "outboxd/dispatch/outcome_writer.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace outboxd::dispatch {
namespace {

constexpr auto kRetryMin = std::chrono::milliseconds{50};
constexpr auto kRetryMax = std::chrono::milliseconds{5000};

}  // namespace

OutcomeWriter::OutcomeWriter(boost::asio::any_io_executor loop, DbLane& lane,
                             metrics::NodeMetrics& metrics, std::size_t max_batch)
    : loop_(loop),
      lane_(lane),
      metrics_(metrics),
      max_batch_(max_batch),
      retry_timer_(loop),
      alive_(std::make_shared<OutcomeWriter*>(this)) {}

OutcomeWriter::~OutcomeWriter() { *alive_ = nullptr; }

void OutcomeWriter::record(store::Outcome outcome, std::string namespace_name, std::string label) {
    buffer_.push_back({std::move(outcome), std::move(namespace_name), std::move(label)});
    if (writing_ || failures_ > 0) return;
    // The write starts once the current handler is done, so the answers of one batch frame
    // go in one statement. Held as writing_ meanwhile: nothing else starts one.
    writing_ = true;
    boost::asio::post(loop_, [alive = std::weak_ptr<OutcomeWriter*>(alive_)] {
        const auto self = alive.lock();
        if (!self || !*self) return;
        (*self)->writing_ = false;
        (*self)->flush();
    });
}

void OutcomeWriter::flush() {
    if (writing_ || buffer_.empty()) return;
    writing_ = true;
    const std::size_t count = std::min(buffer_.size(), max_batch_);
    std::vector<Pending> batch(std::make_move_iterator(buffer_.begin()),
                               std::make_move_iterator(buffer_.begin() + static_cast<long>(count)));
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<long>(count));
    std::weak_ptr<OutcomeWriter*> alive = alive_;
    auto loop = loop_;
    lane_.submit([batch = std::move(batch), alive, loop](DbHandles db) mutable {
        std::vector<store::Outcome> outcomes;
        outcomes.reserve(batch.size());
        for (const auto& p : batch) outcomes.push_back(p.outcome);
        std::vector<bool> applied;
        std::string error;
        try {
            applied = db.outbox.record_outcomes(outcomes);
        } catch (const std::exception& e) {
            error = e.what();
        }
        boost::asio::post(loop, [alive, batch = std::move(batch), applied = std::move(applied),
                                 error = std::move(error)]() mutable {
            const auto self = alive.lock();
            if (!self || !*self) return;
            if (error.empty()) {
                (*self)->finish(std::move(batch), std::move(applied));
            } else {
                (*self)->fail(std::move(batch), error);
            }
        });
    });
}

void OutcomeWriter::finish(std::vector<Pending> batch, std::vector<bool> applied) {
    writing_ = false;
    const bool recovered = failures_ > 0;
    if (recovered) spdlog::info("event=outcome_writes_recovered after_failures={}", failures_);
    failures_ = 0;
    bool rearmed = false;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const auto& outcome = batch[i].outcome;
        // A retried batch may have landed the first time, unseen: count its re-arms too.
        if ((applied[i] || recovered) &&
            (outcome.kind == store::Outcome::Kind::release ||
             (outcome.kind == store::Outcome::Kind::retry && outcome.delay.count() == 0))) {
            rearmed = true;
        }
        if (applied[i]) {
            ++settled_[batch[i].namespace_name];
            // Releases are not outcomes (the row never reached a worker): no label.
            if (!batch[i].label.empty()) {
                metrics_.outcome(batch[i].namespace_name, batch[i].label).Increment();
            }
        } else {
            // The claim was re-armed, cancelled or already answered: nothing to change.
            ++stale_;
        }
    }
    flush();
    if (rearmed && on_rearmed_) on_rearmed_();
    if ((idle() || recovered) && on_settled_) on_settled_();
}

void OutcomeWriter::fail(std::vector<Pending> batch, const std::string& error) {
    writing_ = false;
    ++failures_;
    metrics_.outcome_write_failures_total.Increment();
    // Put the batch back in front, in order: it is retried before anything newer.
    buffer_.insert(buffer_.begin(), std::make_move_iterator(batch.begin()),
                   std::make_move_iterator(batch.end()));
    const auto delay = std::min(kRetryMax, kRetryMin * (1 << std::min<std::uint32_t>(failures_, 7)));
    if (failures_ == 1 || failures_ % 20 == 0) {
        spdlog::warn("event=outcome_write_failed failures={} kept={} retry_in_ms={} error=\"{}\"",
                     failures_, buffer_.size(), delay.count(), error);
    }
    retry_timer_.expires_after(delay);
    retry_timer_.async_wait([alive = std::weak_ptr<OutcomeWriter*>(alive_)](auto ec) {
        const auto self = alive.lock();
        if (ec || !self || !*self) return;
        (*self)->flush();
    });
}

}  // namespace outboxd::dispatch
