#pragma once

// LISTENs on the outbox wake channel on its own connection and thread, and calls `on_wake`
// (from that thread) for every notification batch. Advisory: reconnects after a failure,
// and a lost wake only costs poll latency.
//
// A notification's payload says what woke it:
// - {"routes":[[namespace, task_queue],…]}: new rows in those routes (the insert trigger,
//   migration 0007);
// - empty: new rows somewhere (a requeued dead letter, a staging statement whose routes did
//   not fit a notification): every route may have some;
// - "front": rows that became claimable behind where claims read on (a resumed workflow),
//   which only a claim from the front finds, in any route;
// - "cancel:<task id>,…": claims settled without their workers (a cancelled workflow); the
//   node holding one tells its worker.
// Anything else counts as empty.

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace outboxd::store {

inline constexpr const char* kWakeChannel = "outbox_wake";
inline constexpr const char* kWakeFromFront = "front";
inline constexpr std::string_view kWakeCancelPrefix = "cancel:";

// What a batch of notifications said, together.
struct WakeNotice {
    bool from_front = false;  // some said "front"
    bool anywhere = false;    // some named no route (or was the first after (re)connecting)
    std::vector<std::pair<std::string, std::string>> routes;  // (namespace, task_queue), once each
    std::vector<std::string> cancelled;                       // task ids of cancelled claims

    // Adds what one notification's payload says.
    void add(std::string_view payload);
};

class WakeListener {
public:
    // `on_wake(notice)`, from the listener's thread, for each batch of notifications;
    // `database` names it in the log.
    WakeListener(std::string database_url, std::function<void(const WakeNotice&)> on_wake,
                 std::string database = "default");
    ~WakeListener();  // stops within ~200 ms
    WakeListener(const WakeListener&) = delete;
    WakeListener& operator=(const WakeListener&) = delete;

    // True while LISTEN is established (for readiness and tests).
    [[nodiscard]] bool listening() const { return listening_.load(); }

private:
    void run();

    std::string database_url_;
    std::function<void(const WakeNotice&)> on_wake_;
    std::string database_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> listening_{false};
    std::thread thread_;
};

}  // namespace outboxd::store
