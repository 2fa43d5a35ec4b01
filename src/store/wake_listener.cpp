#include "outboxd/store/wake_listener.hpp"

#include <chrono>
#include <thread>
#include <utility>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace outboxd::store {
namespace {

// What a batch of notifications asked for.
struct Woken {
    bool any = false;
    bool from_front = false;
};

// Records that a notification arrived; the listener loop then calls on_wake once for the
// whole batch, so a burst of inserts costs one sweep request.
class Receiver final : public pqxx::notification_receiver {
public:
    Receiver(pqxx::connection_base& conn, Woken& woken)
        : pqxx::notification_receiver(conn, kWakeChannel), woken_(woken) {}
    void operator()(const std::string& payload, int) override {
        woken_.any = true;
        woken_.from_front = woken_.from_front || payload == kWakeFromFront;
    }

private:
    Woken& woken_;
};

constexpr long kPollMicros = 200'000;  // bounds how long stopping takes
constexpr auto kReconnectDelay = std::chrono::seconds{1};

}  // namespace

WakeListener::WakeListener(std::string database_url, std::function<void(bool)> on_wake)
    : database_url_(std::move(database_url)),
      on_wake_(std::move(on_wake)),
      thread_([this] { run(); }) {}

WakeListener::~WakeListener() {
    stopping_ = true;
    thread_.join();
}

void WakeListener::run() {
    while (!stopping_) {
        try {
            pqxx::connection conn{database_url_};
            Woken woken;
            Receiver receiver{conn, woken};
            // Anything staged or resumed while we were not listening is found by this first
            // wake.
            listening_ = true;
            on_wake_(true);
            while (!stopping_) {
                conn.await_notification(0, kPollMicros);
                if (woken.any) {
                    on_wake_(std::exchange(woken, {}).from_front);
                }
            }
            listening_ = false;
        } catch (const std::exception& error) {
            listening_ = false;
            spdlog::warn("event=wake_listener_down error=\"{}\" retry_in_ms={}", error.what(),
                         std::chrono::milliseconds{kReconnectDelay}.count());
            for (int i = 0; i < 10 && !stopping_; ++i) {
                std::this_thread::sleep_for(kReconnectDelay / 10);
            }
        }
    }
}

}  // namespace outboxd::store
