#include "outboxd/dispatch/outcome_batches.hpp"

#include <algorithm>
#include <iterator>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

std::vector<PendingOutcome> OutcomeBatches::take(std::size_t max_batch) {
    std::size_t count = std::min(queue_.size(), max_batch);
    if (isolation_.suspect > 0) count = std::min({count, isolation_.suspect, isolation_.split});
    std::vector<PendingOutcome> batch(
        std::make_move_iterator(queue_.begin()),
        std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(count)));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(count));
    return batch;
}

OutcomeBatches::Verdict OutcomeBatches::landed(std::size_t count) {
    Verdict verdict;
    unexplained_ = 0;
    if (isolation_.suspect > 0) {
        isolation_.landed += count;
        isolation_.suspect -= std::min(isolation_.suspect, count);
        if (isolation_.suspect == 0) conclude(verdict);
    }
    return verdict;
}

OutcomeBatches::Verdict OutcomeBatches::failed(std::vector<PendingOutcome> batch,
                                               WriteFailure failure, const std::string& error) {
    // During an isolation every failure is the isolation's business; an unexplained error
    // that keeps coming back for the same batch is isolated like a data error.
    if (failure == WriteFailure::data || isolation_.suspect > 0 ||
        (failure == WriteFailure::unexplained && ++unexplained_ >= kIsolateAfter)) {
        return isolate(std::move(batch), failure, error);
    }
    return keep(std::move(batch), error);
}

OutcomeBatches::Verdict OutcomeBatches::keep(std::vector<PendingOutcome> batch,
                                             const std::string& error) {
    put_back(std::move(batch));
    Verdict verdict;
    verdict.retry = true;
    verdict.error = error;
    return verdict;
}

OutcomeBatches::Verdict OutcomeBatches::isolate(std::vector<PendingOutcome> batch,
                                                WriteFailure failure, const std::string& error) {
    Verdict verdict;
    if (isolation_.suspect == 0) {
        isolation_ = {};
        isolation_.suspect = batch.size();
    }
    isolation_.data = isolation_.data || failure == WriteFailure::data;
    if (batch.size() > 1) {
        // Halve until what fails is alone; the rest lands on the way.
        isolation_.split = (batch.size() + 1) / 2;
        put_back(std::move(batch));
        return verdict;
    }
    isolation_.suspect -= 1;
    PendingOutcome refused = std::move(batch.front());
    if (refused.substitute) {
        // Not even a dead letter is accepted: give up on this answer.
        verdict.abandoned.emplace_back(refused.outcome.ref, error);
    } else {
        isolation_.refused.emplace_back(std::move(refused), error);
    }
    if (isolation_.suspect == 0) conclude(verdict);
    return verdict;
}

void OutcomeBatches::conclude(Verdict& verdict) {
    auto refused = std::move(isolation_.refused);
    const bool item_at_fault = isolation_.data || isolation_.landed > 0;
    isolation_ = {};
    unexplained_ = 0;
    if (refused.empty()) return;
    if (!item_at_fault) {
        // Every outcome failed alone as it did together, and not for its data: the database
        // refuses these writes as such (a trigger, a permission). That is an outage, not
        // poison: kept, and retried with backoff.
        std::vector<PendingOutcome> kept;
        kept.reserve(refused.size());
        for (auto& [pending, why] : refused) kept.push_back(std::move(pending));
        const auto error = refused.back().second;
        auto retry = keep(std::move(kept), error);
        verdict.retry = true;
        verdict.error = std::move(retry.error);
        return;
    }
    // In reverse, so that they stay in order in front of the queue.
    for (auto it = refused.rbegin(); it != refused.rend(); ++it) {
        auto& [pending, why] = *it;
        verdict.dead_lettered.emplace_back(pending.outcome.ref, why);
        queue_.push_front(
            {store::Outcome::fail(
                 pending.outcome.ref,
                 util::sanitize_text("outcome could not be recorded: " + why, kRefusalBytes)),
             std::move(pending.namespace_name), "failed", /*substitute=*/true});
    }
    std::reverse(verdict.dead_lettered.begin(), verdict.dead_lettered.end());
}

void OutcomeBatches::put_back(std::vector<PendingOutcome> batch) {
    // In front, in order: retried before anything newer.
    queue_.insert(queue_.begin(), std::make_move_iterator(batch.begin()),
                  std::make_move_iterator(batch.end()));
}

}  // namespace outboxd::dispatch
