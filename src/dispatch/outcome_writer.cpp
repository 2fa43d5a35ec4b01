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
// How much of the database's refusal a substitute dead letter keeps.
constexpr std::size_t kRefusalBytes = 500;
// An unexplained error (not the data's, not a lost connection or contention) for the same
// batch this many times in a row is looked into like a data error.
constexpr std::uint32_t kIsolateAfter = 3;

}  // namespace

OutcomeWriter::OutcomeWriter(boost::asio::any_io_executor loop, DbLane& lane,
                             metrics::NodeMetrics& metrics, std::size_t max_batch)
    : loop_(loop),
      lane_(lane),
      metrics_(metrics),
      max_batch_(max_batch),
      retry_backoff_(kRetryMin, kRetryMax, std::random_device{}()),
      retry_timer_(loop) {}

void OutcomeWriter::record(store::Outcome outcome, std::string namespace_name, std::string label) {
    buffer_.push_back({std::move(outcome), std::move(namespace_name), std::move(label)});
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
    if (writing_ || retry_pending_ || buffer_.empty()) return;
    writing_ = true;
    std::size_t count = std::min(buffer_.size(), max_batch_);
    if (isolation_.suspect > 0) count = std::min({count, isolation_.suspect, isolation_.split});
    // Shared with the job, so that a batch the lane refuses comes back here.
    auto batch = std::make_shared<std::vector<Pending>>(
        std::make_move_iterator(buffer_.begin()),
        std::make_move_iterator(buffer_.begin() + static_cast<long>(count)));
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<long>(count));
    struct Written {
        std::vector<bool> applied;
        std::string error;
        Failure failure = Failure::transient;
    };
    const bool queued = lane_.call(
        loop_, lifetime_.watch(),
        [batch](DbHandles db) {
            std::vector<store::Outcome> outcomes;
            outcomes.reserve(batch->size());
            for (const auto& p : *batch) outcomes.push_back(p.outcome);
            Written written;
            try {
                written.applied = db.outcomes.record_outcomes(outcomes);
            } catch (const store::ValidationError& e) {
                written.error = e.what();  // the data: the same batch would fail the same way
                written.failure = Failure::data;
            } catch (const store::UnavailableError& e) {
                written.error = e.what();  // whether it landed is unknown: retried as a whole
            } catch (const store::ConflictError& e) {
                written.error = e.what();  // contention or a timeout: it passes later
            }
            return written;  // any other error: unexplained (the result's error)
        },
        [this, batch](LaneResult<Written> done) {
            if (!done.ok()) return fail(std::move(*batch), Failure::unexplained, done.error);
            if (!done.value.error.empty()) {
                return fail(std::move(*batch), done.value.failure, done.value.error);
            }
            finish(std::move(*batch), std::move(done.value.applied));
        });
    // A full lane (a stalled database) is a transient failure: kept, retried later.
    if (!queued) fail(std::move(*batch), Failure::transient, "the outcomes lane is full");
}

void OutcomeWriter::finish(std::vector<Pending> batch, std::vector<bool> applied) {
    writing_ = false;
    const bool recovered = failures_.failures() > 0;
    const auto lasted = failures_.lasted(std::chrono::steady_clock::now());
    if (const auto failed = failures_.succeeded(); failed > 0) {
        spdlog::info("event=outcome_writes_recovered failures={} after_ms={}", failed,
                     lasted.count());
    }
    retry_backoff_.reset();
    unexplained_ = 0;
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
    if (isolation_.suspect > 0) {
        isolation_.landed += batch.size();
        isolation_.suspect -= std::min(isolation_.suspect, batch.size());
        if (isolation_.suspect == 0) conclude();
    }
    flush();
    if (rearmed && on_rearmed_) on_rearmed_();
    if ((idle() || recovered) && on_settled_) on_settled_();
}

void OutcomeWriter::fail(std::vector<Pending> batch, Failure failure, const std::string& error) {
    writing_ = false;
    metrics_.outcome_write_failures_total.Increment();
    // During an isolation every failure is the isolation's business; an unexplained error
    // that keeps coming back for the same batch is isolated like a data error.
    if (failure == Failure::data || isolation_.suspect > 0 ||
        (failure == Failure::unexplained && ++unexplained_ >= kIsolateAfter)) {
        return isolate(std::move(batch), failure, error);
    }
    retry_later(std::move(batch), error);
}

void OutcomeWriter::retry_later(std::vector<Pending> batch, const std::string& error) {
    put_back(std::move(batch));
    const auto delay = retry_backoff_.next();
    const auto now = std::chrono::steady_clock::now();
    if (failures_.failed(now)) {
        spdlog::warn(
            "event=outcome_write_failed failures={} for_ms={} kept={} retry_in_ms={} error=\"{}\"",
            failures_.failures(), failures_.lasted(now).count(), buffer_.size(), delay.count(),
            util::log_safe(error));
    }
    retry_pending_ = true;
    retry_timer_.expires_after(delay);
    retry_timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired()) return;
        retry_pending_ = false;
        flush();
    });
}

void OutcomeWriter::isolate(std::vector<Pending> batch, Failure failure, const std::string& error) {
    if (isolation_.suspect == 0) {
        isolation_ = {};
        isolation_.suspect = batch.size();
        isolation_.data = failure == Failure::data;
    }
    isolation_.data = isolation_.data || failure == Failure::data;
    if (batch.size() > 1) {
        // Halve until what fails is alone; the rest lands on the way.
        isolation_.split = (batch.size() + 1) / 2;
        put_back(std::move(batch));
        return flush();
    }
    isolation_.suspect -= 1;
    Pending refused = std::move(batch.front());
    if (refused.substitute) {
        // Not even a dead letter is accepted: give up on this answer. The row stays claimed
        // and the stale-claim backstop re-arms it; nothing is lost.
        metrics_.outcomes_abandoned_total.Increment();
        spdlog::error("event=outcome_abandoned task={}.{} error=\"{}\"", refused.outcome.ref.id,
                      refused.outcome.ref.token, util::log_safe(error));
    } else {
        isolation_.refused.emplace_back(std::move(refused), error);
    }
    if (isolation_.suspect == 0) conclude();
    flush();
}

void OutcomeWriter::conclude() {
    auto refused = std::move(isolation_.refused);
    const bool item_at_fault = isolation_.data || isolation_.landed > 0;
    isolation_ = {};
    unexplained_ = 0;
    if (refused.empty()) return;
    if (!item_at_fault) {
        // Every outcome failed alone as it did together, and not for its data: the database
        // refuses these writes as such (a trigger, a permission). That is an outage, not
        // poison: kept, and retried with backoff while the node stops claiming.
        std::vector<Pending> kept;
        for (auto& [pending, why] : refused) kept.push_back(std::move(pending));
        return retry_later(std::move(kept), refused.back().second);
    }
    // In reverse, so that they stay in order in front of the buffer.
    for (auto it = refused.rbegin(); it != refused.rend(); ++it) {
        auto& [pending, why] = *it;
        metrics_.outcomes_refused_total.Increment();
        spdlog::warn("event=outcome_refused task={}.{} error=\"{}\" recorded_as=dead_letter",
                     pending.outcome.ref.id, pending.outcome.ref.token, util::log_safe(why));
        buffer_.push_front(
            {store::Outcome::fail(
                 pending.outcome.ref,
                 util::sanitize_text("outcome could not be recorded: " + why, kRefusalBytes)),
             std::move(pending.namespace_name), "failed", /*substitute=*/true});
    }
}

void OutcomeWriter::put_back(std::vector<Pending> batch) {
    // In front, in order: retried before anything newer.
    buffer_.insert(buffer_.begin(), std::make_move_iterator(batch.begin()),
                   std::make_move_iterator(batch.end()));
}

}  // namespace outboxd::dispatch
