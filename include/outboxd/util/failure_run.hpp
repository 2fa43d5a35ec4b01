#pragma once

// When a repeating failure (a database that is down, a lane that keeps failing) is worth a
// log line: the first failure of a run, then a summary now and then, then one line when
// the run ends. Never one line per try. Time is passed in; one owner, no locking.

#include <chrono>
#include <cstdint>

namespace outboxd::util {

class FailureRun {
public:
    using Clock = std::chrono::steady_clock;

    explicit FailureRun(Clock::duration summary_every = std::chrono::seconds{30})
        : summary_every_(summary_every) {}

    // A failure at `now`: true when it should be logged (the first of a run, or a summary
    // is due).
    bool failed(Clock::time_point now) {
        if (failures_++ == 0) {
            since_ = last_logged_ = now;
            return true;
        }
        if (now - last_logged_ < summary_every_) return false;
        last_logged_ = now;
        return true;
    }
    // A success: how many failures the run that it ends had (0: there was none).
    std::uint64_t succeeded() {
        const auto ended = failures_;
        failures_ = 0;
        return ended;
    }
    [[nodiscard]] std::uint64_t failures() const { return failures_; }
    // How long the current run has lasted at `now`.
    [[nodiscard]] std::chrono::milliseconds lasted(Clock::time_point now) const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(now - since_);
    }

private:
    Clock::duration summary_every_;
    std::uint64_t failures_ = 0;
    Clock::time_point since_{};
    Clock::time_point last_logged_{};
};

}  // namespace outboxd::util
