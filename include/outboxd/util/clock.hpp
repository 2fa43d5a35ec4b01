#pragma once

// The time seam of the loop's decisions: components that judge deadlines, rests and pacing
// read `now` through a SteadyNow, so that a unit test can drive them in simulated time
// (timers still fire on the real clock; a test calls what they would call).

#include <chrono>
#include <functional>

namespace outboxd::util {

using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;

[[nodiscard]] inline SteadyNow real_steady_now() {
    return [] { return std::chrono::steady_clock::now(); };
}

}  // namespace outboxd::util
