#pragma once

// Targets as a sink kind (README, "Targets"): HTTP push, NATS and AMQP targets are rows of
// each database, so every engine gets a Targets of its own.
//
// Thread affinity: the loop thread.

#include <memory>

#include "outboxd/sinks/sink_provider.hpp"
#include "outboxd/sinks/targets/targets.hpp"

namespace outboxd::sinks::targets {

class TargetSinks final : public SinkProvider {
public:
    explicit TargetSinks(TargetsSettings settings) : settings_(std::move(settings)) {}

    [[nodiscard]] std::unique_ptr<EngineSinks> for_engine(const EngineView& engine) override {
        auto settings = settings_;
        settings.database = engine.database;
        return std::make_unique<Targets>(engine.loop, engine.admin_lane, engine.port,
                                         engine.metrics, std::move(settings));
    }
    [[nodiscard]] const HostPolicy& policy() const { return settings_.policy; }

private:
    TargetsSettings settings_;
};

}  // namespace outboxd::sinks::targets
