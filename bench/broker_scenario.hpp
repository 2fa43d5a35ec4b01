#pragma once

// Broker targets (README, "Broker targets"): once per repetition, settings.broker_rows rows
// drained over WebSocket to the usual outboxd-worker processes, then the same rows by one node
// into a NATS JetStream stream (a target of kind nats) and into a RabbitMQ exchange with a
// bound durable queue (kind amqp), each broker a child process of its run's own:
// nats_ratio_to_ws, amqp_ratio_to_ws. Before each drain, on the same broker, the broker's own
// limit: as many messages as the drain's rows, like the target's, published by the driver
// alone (broker_admin::nats_publish_acked, amqp_publish_confirmed; no outboxd, no PostgreSQL)
// and then purged: nats_/amqp_limit_rows_per_s, _ratio_to_limit. Then, once, the latency of a NATS
// target at a steady rate (latency_probe.hpp), COMMIT -> message received by a core subscriber in
// the driver.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "e2e_drain.hpp"
#include "latency_probe.hpp"
#include "node_fleet.hpp"
#include "scenario.hpp"

namespace outboxd::bench {

// One drain into a broker, and what the broker held after it.
struct BrokerRun {
    E2eResult drain;
    std::uint64_t stored = 0;     // messages in the stream or queue
    double limit_rows_per_s = 0;  // the driver alone, same broker, same count, before the drain

    [[nodiscard]] double rows_per_s() const { return drain.rows_per_s(); }
};

class BrokerScenario final : public Scenario {
public:
    static constexpr std::string_view kName = "brokers";

    [[nodiscard]] std::string_view name() const override { return kName; }
    [[nodiscard]] std::string_view description() const override {
        return "NATS JetStream and RabbitMQ targets against the same rows over WebSocket; the "
               "NATS target's latency";
    }
    // The brokers are Debian's (scripts/install-deps), not built here.
    [[nodiscard]] std::vector<std::string_view> binaries() const override {
        return {kNodeBinary, kWorkerBinary};
    }

    void repeat(const Turn& turn) override;
    void once(const Turn& turn) override;

    void render_table(const BenchSettings& settings, const ScenarioRegistry& registry,
                      ReportTable& table) const override;
    void add_json(const ScenarioRegistry& registry, nlohmann::json& out) const override;
    [[nodiscard]] double max_foreign_cpu() const override;

private:
    std::vector<E2eResult> ws_runs_;  // run i beside nats_runs_[i] and amqp_runs_[i]
    std::vector<BrokerRun> nats_runs_;
    std::vector<BrokerRun> amqp_runs_;
    std::optional<LatencyResult> nats_latency_;
};

}  // namespace outboxd::bench
