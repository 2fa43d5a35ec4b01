#include "outboxd/sinks/broker_state.hpp"

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks {
namespace {

prometheus::Labels labels(const std::string& database, const std::string& target,
                          const std::string& kind) {
    return {{"database", database}, {"target", target}, {"kind", kind}};
}

prometheus::Labels with_outcome(prometheus::Labels labels, const char* outcome) {
    labels.emplace("outcome", outcome);
    return labels;
}

}  // namespace

BrokerState::BrokerState(metrics::NodeMetrics& metrics, std::string database, std::string target,
                         std::string kind)
    : database_(std::move(database)),
      target_(std::move(target)),
      kind_(std::move(kind)),
      acked_(metrics.target_messages_total.Add(
          with_outcome(labels(database_, target_, kind_), "acked"))),
      failed_(metrics.target_messages_total.Add(
          with_outcome(labels(database_, target_, kind_), "failed"))),
      dead_(metrics.target_messages_total.Add(
          with_outcome(labels(database_, target_, kind_), "dead"))),
      inflight_(metrics.target_inflight.Add(labels(database_, target_, kind_))),
      connected_gauge_(metrics.target_connected.Add(labels(database_, target_, kind_))) {
    connected_gauge_.Set(0);
}

bool BrokerState::set_connected(bool up, const std::string& why) {
    if (!up && !why.empty()) error(why);
    if (up == connected_) return false;
    connected_ = up;
    connected_gauge_.Set(up ? 1 : 0);
    if (up) {
        spdlog::info("event=target_connected database={} target=\"{}\" kind={}", database_,
                     util::log_safe(target_), kind_);
    } else {
        spdlog::warn("event=target_disconnected database={} target=\"{}\" kind={} reason=\"{}\"",
                     database_, util::log_safe(target_), kind_, util::log_safe(why));
    }
    return true;
}

void BrokerState::closed() {
    connected_ = false;
    connected_gauge_.Set(0);
}

void BrokerState::published() { inflight_.Increment(); }

void BrokerState::acked() {
    inflight_.Decrement();
    acked_.Increment();
    unreported_success_ = true;
}

void BrokerState::failed(const std::string& why, bool dead) {
    inflight_.Decrement();
    (dead ? dead_ : failed_).Increment();
    error(why);
}

void BrokerState::forget(std::size_t count) { inflight_.Decrement(static_cast<double>(count)); }

void BrokerState::error(const std::string& why) {
    last_error_ = why;
    unreported_error_ = why;
}

store::TargetReport BrokerState::take_report() {
    store::TargetReport report;
    report.name = target_;
    report.error = std::exchange(unreported_error_, std::nullopt);
    report.succeeded = std::exchange(unreported_success_, false);
    return report;
}

}  // namespace outboxd::sinks
