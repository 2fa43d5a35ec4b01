#pragma once

// HTTP push as a sink kind (README, "HTTP push"): its targets are rows of each database, so
// every engine gets an HttpTargets of its own.
//
// Thread affinity: the loop thread.

#include <memory>

#include "outboxd/sinks/http_push/http_targets.hpp"
#include "outboxd/sinks/sink_provider.hpp"

namespace outboxd::sinks::http_push {

class HttpPush final : public SinkProvider {
public:
    explicit HttpPush(PushSettings settings) : settings_(std::move(settings)) {}

    [[nodiscard]] std::unique_ptr<EngineSinks> for_engine(const EngineView& engine) override {
        auto settings = settings_;
        settings.database = engine.database;
        return std::make_unique<HttpTargets>(engine.loop, engine.admin_lane, engine.port,
                                             engine.metrics, std::move(settings));
    }
    [[nodiscard]] const HostPolicy& policy() const { return settings_.policy; }

private:
    PushSettings settings_;
};

}  // namespace outboxd::sinks::http_push
