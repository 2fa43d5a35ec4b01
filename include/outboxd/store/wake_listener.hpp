#pragma once

// LISTENs on the outbox wake channel on its own connection and thread, and calls `on_wake`
// (from that thread) for every notification batch. Advisory: reconnects after a failure,
// and a lost wake only costs poll latency.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace outboxd::store {

inline constexpr const char* kWakeChannel = "outbox_wake";

class WakeListener {
public:
    WakeListener(std::string database_url, std::function<void()> on_wake);
    ~WakeListener();  // stops within ~200 ms
    WakeListener(const WakeListener&) = delete;
    WakeListener& operator=(const WakeListener&) = delete;

    // True while LISTEN is established (for readiness and tests).
    [[nodiscard]] bool listening() const { return listening_.load(); }

private:
    void run();

    std::string database_url_;
    std::function<void()> on_wake_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> listening_{false};
    std::thread thread_;
};

}  // namespace outboxd::store
