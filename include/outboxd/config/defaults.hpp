#pragma once

// The one catalogue of default values: what a node runs with when a setting is not given
// (README, "Configuration"). The configuration and every component's settings start from
// these, so that a default is written down once.

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace outboxd::defaults {

using std::chrono::milliseconds;

// Claims.
inline constexpr milliseconds kPollInterval{500};
inline constexpr milliseconds kClaimLookback{100};
inline constexpr std::int32_t kBatchSize = 256;
// Rows a claim apart from the rounds (routes woken from idle) takes at most.
inline constexpr std::int32_t kClaimApartBatch = 32;
// Tasks: attempts, retry backoff, timeout.
inline constexpr std::int32_t kMaxAttempts = 10;
inline constexpr milliseconds kBackoffBase{1000};
inline constexpr double kBackoffMultiplier = 2.0;
inline constexpr milliseconds kBackoffMax{300000};
inline constexpr milliseconds kTaskTimeout{30000};
// The stale-claim backstop re-arms a claim this long after its task's deadline.
inline constexpr milliseconds kStaleGrace{10000};
// Cluster: shard leases and node liveness.
inline constexpr milliseconds kLeaseTtl{5000};
// Tenants.
inline constexpr std::int32_t kDefaultMaxInFlight = 10000;
inline constexpr milliseconds kQuotaCacheTtl{1000};
// Finished rows are kept this long.
inline constexpr std::chrono::seconds kRetention{86400};
// Network bounds.
inline constexpr std::uint16_t kPort = 8080;
inline constexpr std::size_t kMaxFrameBytes = 1 << 20;
inline constexpr std::size_t kMaxResultBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxBodyBytes = 8 << 20;
inline constexpr std::size_t kMaxWriteQueue = 4096;
inline constexpr std::size_t kMaxWriteQueueBytes = 16 << 20;
inline constexpr std::size_t kMaxConnections = 4096;
inline constexpr std::size_t kHttpMaxResponseBytes = std::size_t{64} * 1024;
inline constexpr milliseconds kHttpIdleTimeout{60000};
inline constexpr milliseconds kApiStatementTimeout{10000};
inline constexpr milliseconds kDrainTimeout{30000};

}  // namespace outboxd::defaults
