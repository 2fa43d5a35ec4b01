#include "outboxd/store/wake_listener.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/retry_backoff.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "pg_session.hpp"

namespace outboxd::store {
namespace {

// What a batch of notifications asked for.
struct Woken {
    bool any = false;
    WakeNotice notice;
};

// Records that a notification arrived; the listener loop then calls on_wake once for the
// whole batch, so a burst of inserts costs one sweep request.
class Receiver final : public pqxx::notification_receiver {
public:
    Receiver(pqxx::connection_base& conn, Woken& woken)
        : pqxx::notification_receiver(conn, kWakeChannel), woken_(woken) {}
    void operator()(const std::string& payload, int) override {
        woken_.any = true;
        woken_.notice.add(payload);
    }

private:
    Woken& woken_;
};

// Cancel signals one batch keeps at most (one missed only leaves a worker running a task
// whose answer changes nothing).
constexpr std::size_t kMaxCancelled = 100000;
// A batch naming more routes than this is as good as one naming none.
constexpr std::size_t kMaxWokenRoutes = 4096;

constexpr long kPollMicros = 200'000;  // bounds how long stopping takes
constexpr auto kStopCheck = std::chrono::milliseconds{100};
// Reconnects back off from 100 ms to 5 s: a lost wake only costs poll latency, and the poll
// keeps running meanwhile.
constexpr auto kReconnectMin = std::chrono::milliseconds{100};
constexpr auto kReconnectMax = std::chrono::milliseconds{5000};
constexpr auto kSummaryEvery = std::chrono::seconds{30};
// Up this long, a connection ends an outage; one lost sooner continues it (no new "down"
// line, no reset backoff): a flapping connection is one outage, not many.
constexpr auto kStableAfter = std::chrono::seconds{5};
// A listener left on a demoted primary (one that keeps its sessions: read-only, or fenced)
// would hear nothing the new primary notifies: it asks every kReadOnlyCheckEvery whether its
// server still takes writes, and reconnects (with target_session_attrs=read-write, to the new
// primary) when not.
void require_writable(pqxx::connection& conn) {
    pqxx::nontransaction tx{conn};
    if (tx.exec1(kReadOnlyServerSql)[0].as<bool>()) {
        throw std::runtime_error{
            "the server no longer takes writes (a standby, or a primary turned read-only)"};
    }
}

}  // namespace

void WakeNotice::add(std::string_view payload) {
    if (payload == kWakeFromFront) {
        from_front = true;
        return;
    }
    if (payload.starts_with(kWakeCancelPrefix)) {
        payload.remove_prefix(kWakeCancelPrefix.size());
        // Bounded: a notification carries at most 8,000 bytes.
        while (!payload.empty()) {
            const auto comma = payload.find(',');
            const auto id = payload.substr(0, comma);
            if (!id.empty() && id.size() <= 64 && cancelled.size() < kMaxCancelled) {
                cancelled.emplace_back(id);
            }
            if (comma == std::string_view::npos) break;
            payload.remove_prefix(comma + 1);
        }
        return;
    }
    const auto parsed = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
    const auto named = parsed.is_object() ? parsed.find("routes") : parsed.end();
    if (named == parsed.end() || !named->is_array() || named->empty()) {
        anywhere = true;
        return;
    }
    for (const auto& route : *named) {
        if (!route.is_array() || route.size() != 2 || !route[0].is_string() ||
            !route[1].is_string()) {
            anywhere = true;
            continue;
        }
        std::pair<std::string, std::string> key{route[0].get<std::string>(),
                                                route[1].get<std::string>()};
        if (std::find(routes.begin(), routes.end(), key) == routes.end())
            routes.push_back(std::move(key));
    }
    if (routes.size() > kMaxWokenRoutes) {
        routes.clear();
        anywhere = true;
    }
}

WakeListener::WakeListener(std::string database_url, std::function<void(const WakeNotice&)> on_wake,
                           std::string database)
    : database_url_(std::move(database_url)),
      on_wake_(std::move(on_wake)),
      database_(std::move(database)),
      thread_([this] { run(); }) {}

WakeListener::~WakeListener() {
    stopping_ = true;
    thread_.join();
}

void WakeListener::run() {
    util::RetryBackoff backoff{kReconnectMin, kReconnectMax, std::random_device{}()};
    util::FailureRun failures{kSummaryEvery};
    while (!stopping_) {
        try {
            pqxx::connection conn{with_connection_defaults(database_url_)};
            require_writable(conn);
            Woken woken;
            Receiver receiver{conn, woken};
            auto role_checked = std::chrono::steady_clock::now();
            // Anything staged or resumed while we were not listening is found by this first
            // wake.
            listening_ = true;
            const auto up_at = std::chrono::steady_clock::now();
            bool stable = false;  // a connection that drops at once is part of the same outage
            WakeNotice reconnected;
            reconnected.from_front = true;
            reconnected.anywhere = true;
            on_wake_(reconnected);
            while (!stopping_) {
                conn.await_notification(0, kPollMicros);
                if (woken.any) {
                    on_wake_(std::exchange(woken, {}).notice);
                }
                if (const auto now = std::chrono::steady_clock::now();
                    now - role_checked >= kReadOnlyCheckEvery) {
                    require_writable(conn);
                    role_checked = now;
                }
                if (!stable && std::chrono::steady_clock::now() - up_at >= kStableAfter) {
                    stable = true;
                    const auto down_for = failures.lasted(up_at);
                    if (const auto failed = failures.succeeded(); failed > 0) {
                        spdlog::info(
                            "event=wake_listener_up database={} failed_attempts={} down_ms={}",
                            database_, failed, down_for.count());
                    }
                    backoff.reset();
                }
            }
            listening_ = false;
        } catch (const std::exception& error) {
            listening_ = false;
            const auto now = std::chrono::steady_clock::now();
            const auto delay = backoff.next();
            if (failures.failed(now)) {
                spdlog::warn(
                    "event=wake_listener_down database={} failed_attempts={} down_ms={} "
                    "retry_in_ms={} error=\"{}\"",
                    database_, failures.failures(), failures.lasted(now).count(), delay.count(),
                    util::log_safe(error.what()));
            }
            const auto until = now + delay;
            while (!stopping_ && std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                    kStopCheck, until - std::chrono::steady_clock::now()));
            }
        }
    }
}

}  // namespace outboxd::store
