#pragma once

// What the scenarios that drain rows into a target (HTTP push, broker targets) share: nodes
// that may reach 127.0.0.1, where the bench's receivers and brokers listen, and setting a
// target on a node. Driver thread only.

#include <string>

#include <nlohmann/json.hpp>

#include "bench_context.hpp"

namespace outboxd::bench {

// The settings with 127.0.0.1 added to the nodes' OUTBOXD_HTTP_ALLOWED_HOSTS: a loopback
// address is a target's only when the allow-list holds it.
[[nodiscard]] BenchSettings with_loopback_allowed(BenchSettings settings);

// A context like `base` whose nodes may push to 127.0.0.1; it holds the settings it refers to.
struct LoopbackContext {
    explicit LoopbackContext(const BenchContext& base)
        : settings(with_loopback_allowed(base.settings)),
          context{settings, base.databases, base.pg_cpu} {}
    LoopbackContext(const LoopbackContext&) = delete;
    LoopbackContext& operator=(const LoopbackContext&) = delete;

    BenchSettings settings;
    BenchContext context;
};

// When a target counts as set: the node holds a share of its max_in_flight, and, for a broker
// target, it is connected to the broker too.
enum class TargetReady { served, connected };

// PUT `body` at `path` (/v1/targets/NAME, /v1/http-targets/NAME) on the fleet's first node,
// then waits until that node's view of the target (GET `path`) is `ready`. Throws
// std::runtime_error when the PUT is refused or the target is not ready within 30 s.
void put_target(NodeFleet& fleet, const std::string& path, const nlohmann::json& body,
                TargetReady ready);

}  // namespace outboxd::bench
