#pragma once

// The done rate over time, from the audit trail's per-bucket counts, and how long it took to
// come back after a fault.

#include <cstdint>
#include <map>
#include <optional>

namespace outboxd::chaos {

struct Recovery {
    double pre_rate = 0;            // rows/s over the window before the fault
    double min_rate = 0;            // lowest one-second rate from the fault to recovery
    std::optional<double> seconds;  // from the fault's end; empty: not by `limit_ms`
};

class DoneRate {
public:
    DoneRate(std::map<std::int64_t, std::int64_t> buckets, std::int64_t bucket_ms)
        : buckets_(std::move(buckets)), bucket_ms_(bucket_ms) {}

    // Rows done per second over [from_ms, to_ms).
    [[nodiscard]] double rate(std::int64_t from_ms, std::int64_t to_ms) const;

    // Recovery is the first one-second window starting at or after `end_ms` (and ending by
    // `limit_ms`) whose rate is at least half the rate of the `baseline_ms` before
    // `start_ms`; its start minus `end_ms` is the recovery time (0 when the rate never fell).
    [[nodiscard]] Recovery recovery(std::int64_t start_ms, std::int64_t end_ms,
                                    std::int64_t limit_ms, std::int64_t baseline_ms) const;

private:
    std::map<std::int64_t, std::int64_t> buckets_;  // bucket start (unix ms) -> rows done
    std::int64_t bucket_ms_;
};

}  // namespace outboxd::chaos
