#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "outboxd/store/outbox_row.hpp"

namespace outboxd::http {

// RFC 3339 in UTC with microseconds: "2026-11-29T16:04:53.123456Z".
[[nodiscard]] std::string format_rfc3339(store::TimePoint instant);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)"; nullopt when malformed.
[[nodiscard]] std::optional<store::TimePoint> parse_rfc3339(std::string_view text);

}  // namespace outboxd::http
