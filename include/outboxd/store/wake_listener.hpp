#pragma once

// LISTENs on the outbox wake channel on its own connection and thread, and calls `on_wake`
// (from that thread) for every notification batch. Advisory: reconnects after a failure,
// and a lost wake only costs poll latency.
//
// A notification's payload says what woke it: empty for new rows (the insert trigger, a
// requeued dead letter), "front" for rows that became claimable behind where claims read
// on (a resumed workflow), which only a claim from the front finds.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace outboxd::store {

inline constexpr const char* kWakeChannel = "outbox_wake";
inline constexpr const char* kWakeFromFront = "front";

class WakeListener {
public:
    // `on_wake(from_front)`: from_front when some notification of the batch said "front".
    WakeListener(std::string database_url, std::function<void(bool from_front)> on_wake);
    ~WakeListener();  // stops within ~200 ms
    WakeListener(const WakeListener&) = delete;
    WakeListener& operator=(const WakeListener&) = delete;

    // True while LISTEN is established (for readiness and tests).
    [[nodiscard]] bool listening() const { return listening_.load(); }

private:
    void run();

    std::string database_url_;
    std::function<void(bool from_front)> on_wake_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> listening_{false};
    std::thread thread_;
};

}  // namespace outboxd::store
