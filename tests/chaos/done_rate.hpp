#pragma once

// The done rate over time, from the audit trail's per-bucket counts, and how long the
// cluster took to catch up after a fault.

#include <cstdint>
#include <map>
#include <optional>

namespace outboxd::chaos {

struct Recovery {
    double pre_rate = 0;            // rows/s done over the window before the fault
    double min_rate = 0;            // lowest one-second rate from the fault to recovery
    std::int64_t pre_backlog = 0;   // the most rows staged and not done before the fault
    std::int64_t peak_backlog = 0;  // the most during the fault and its recovery
    std::optional<double> seconds;  // from the fault's end; empty: not by `limit_ms`
    // From the fault's start until it first caught up after falling behind (0: never
    // behind): the whole disruption, which may end before the fault does.
    std::optional<double> since_start;
};

class DoneRate {
public:
    // `done` and `staged`: rows per bucket, keyed by bucket start (unix ms).
    DoneRate(std::map<std::int64_t, std::int64_t> done, std::map<std::int64_t, std::int64_t> staged,
             std::int64_t bucket_ms)
        : done_(std::move(done)), staged_(std::move(staged)), bucket_ms_(bucket_ms) {}

    // Rows done per second over [from_ms, to_ms).
    [[nodiscard]] double rate(std::int64_t from_ms, std::int64_t to_ms) const;
    // Rows staged and not done at `at_ms` (both counted from the first bucket).
    [[nodiscard]] std::int64_t backlog(std::int64_t at_ms) const;

    // A fault is recovered from once the backlog is back to what it was before it: the
    // first bucket at or after `end_ms` (and before `limit_ms`) whose backlog is at most the
    // largest of the `baseline_ms` before `start_ms`, plus what half a second of the earlier
    // rate stages (noise). Recovery time is that bucket minus `end_ms` (0: never behind).
    // Rows done at the old rate while a fault runs still leave a backlog when the load
    // goes on: this measures catching up, not merely dispatching again.
    [[nodiscard]] Recovery recovery(std::int64_t start_ms, std::int64_t end_ms,
                                    std::int64_t limit_ms, std::int64_t baseline_ms) const;

private:
    [[nodiscard]] static std::int64_t sum_before(
        const std::map<std::int64_t, std::int64_t>& buckets, std::int64_t at_ms);

    std::map<std::int64_t, std::int64_t> done_;
    std::map<std::int64_t, std::int64_t> staged_;
    std::int64_t bucket_ms_;
};

}  // namespace outboxd::chaos
