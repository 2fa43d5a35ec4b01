#include "outboxd/dispatch/outcome_writer.hpp"

#include <algorithm>
#include <random>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {
namespace {

constexpr auto kRetryMin = std::chrono::milliseconds{50};
constexpr auto kRetryMax = std::chrono::milliseconds{5000};

}  // namespace

OutcomeWriter::OutcomeWriter(boost::asio::any_io_executor loop, store::OutcomeLane& lane,
                             metrics::DatabaseMetrics& metrics, std::size_t max_batch)
    : loop_(std::move(loop)),
      lane_(lane),
      metrics_(metrics),
      max_batch_(max_batch),
      retry_backoff_(kRetryMin, kRetryMax, std::random_device{}()),
      retry_timer_(loop_) {}

void OutcomeWriter::record(store::Outcome outcome, std::string namespace_name, std::string label) {
    batches_.add({std::move(outcome), std::move(namespace_name), std::move(label)});
    if (writing_ || failures_.failures() > 0) return;
    // The write starts once the current handler is done, so the answers of one batch frame
    // go in one statement. Held as writing_ meanwhile: nothing else starts one.
    writing_ = true;
    boost::asio::post(loop_, [this, watch = lifetime_.watch()] {
        if (watch.expired()) return;
        writing_ = false;
        flush();
    });
}

void OutcomeWriter::flush() {
    if (writing_ || retry_pending_ || batches_.empty()) return;
    writing_ = true;
    // Shared with the job, so that a batch the lane refuses comes back here.
    auto batch = std::make_shared<std::vector<PendingOutcome>>(batches_.take(max_batch_));
    struct Written {
        std::vector<bool> applied;
        std::string error;
        WriteFailure failure = WriteFailure::transient;
    };
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [batch](store::OutcomeStores& db) {
            std::vector<store::Outcome> outcomes;
            outcomes.reserve(batch->size());
            for (const auto& p : *batch) outcomes.push_back(p.outcome);
            Written written;
            try {
                written.applied = db.outcomes.record_outcomes(outcomes);
            } catch (const store::ValidationError& e) {
                written.error = e.what();  // the data: the same batch would fail the same way
                written.failure = WriteFailure::data;
            } catch (const store::TransientError& e) {
                // The database's (whether it landed is unknown, or contention): retried as a
                // whole, later.
                written.error = e.what();
            }
            return written;  // any other error: unexplained (the result's error)
        },
        [this, batch](store::LaneResult<Written> done) {
            if (!done.ok()) return fail(std::move(*batch), WriteFailure::unexplained, done.error);
            if (!done.value.error.empty()) {
                return fail(std::move(*batch), done.value.failure, done.value.error);
            }
            finish(std::move(*batch), std::move(done.value.applied));
        });
    // A full lane (a stalled database) is a transient failure: kept, retried later.
    if (!queued) fail(std::move(*batch), WriteFailure::transient, "the outcomes lane is full");
}

void OutcomeWriter::finish(std::vector<PendingOutcome> batch, std::vector<bool> applied) {
    writing_ = false;
    const bool recovered = failures_.failures() > 0;
    const auto lasted = failures_.lasted(std::chrono::steady_clock::now());
    if (const auto failed = failures_.succeeded(); failed > 0) {
        spdlog::info("event=outcome_writes_recovered database={} failures={} after_ms={}",
                     metrics_.database(), failed, lasted.count());
    }
    retry_backoff_.reset();
    bool rearmed = false;
    std::vector<QueueKey> let_go;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const auto& outcome = batch[i].outcome;
        if (!outcome.let_go_workflow.empty()) {
            let_go.emplace_back(batch[i].namespace_name, outcome.let_go_task_queue);
        }
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
    act(batches_.landed(batch.size()));
    if (rearmed && on_rearmed_) on_rearmed_();
    if (!let_go.empty() && on_let_go_) on_let_go_(let_go);
    if ((idle() || recovered) && on_settled_) on_settled_();
}

void OutcomeWriter::fail(std::vector<PendingOutcome> batch, WriteFailure failure,
                         const std::string& error) {
    writing_ = false;
    metrics_.outcome_write_failures_total.Increment();
    act(batches_.failed(std::move(batch), failure, error));
}

void OutcomeWriter::act(const OutcomeBatches::Verdict& verdict) {
    for (const auto& [ref, why] : verdict.abandoned) {
        // Not even a dead letter is accepted: the row stays claimed and the stale-claim
        // backstop re-arms it; nothing is lost.
        metrics_.outcomes_abandoned_total.Increment();
        spdlog::error("event=outcome_abandoned database={} task={}.{} error=\"{}\"",
                      metrics_.database(), ref.id, ref.token, util::log_safe(why));
    }
    for (const auto& [ref, why] : verdict.dead_lettered) {
        metrics_.outcomes_refused_total.Increment();
        spdlog::warn(
            "event=outcome_refused database={} task={}.{} error=\"{}\" recorded_as=dead_letter",
            metrics_.database(), ref.id, ref.token, util::log_safe(why));
    }
    if (verdict.retry) return retry_later(verdict.error);
    flush();
}

void OutcomeWriter::retry_later(const std::string& error) {
    const auto delay = retry_backoff_.next();
    const auto now = std::chrono::steady_clock::now();
    if (failures_.failed(now)) {
        spdlog::warn(
            "event=outcome_write_failed database={} failures={} for_ms={} kept={} retry_in_ms={} "
            "error=\"{}\"",
            metrics_.database(), failures_.failures(), failures_.lasted(now).count(),
            batches_.size(), delay.count(), util::log_safe(error));
    }
    retry_pending_ = true;
    retry_timer_.expires_after(delay);
    retry_timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired()) return;
        retry_pending_ = false;
        flush();
    });
}

}  // namespace outboxd::dispatch
