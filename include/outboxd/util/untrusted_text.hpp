#pragma once

// Checks for text that comes from outside the node (HTTP paths and bodies, WebSocket
// frames, rows inserted by plain SQL) before it is stored, echoed or logged. Pure functions;
// none of them throws.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace outboxd::util {

// The longest name, id or route (a key, a workflow id, a namespace, an activity type) the
// node takes from a client, in bytes.
inline constexpr std::size_t kMaxIdentifierBytes = 1024;

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past
// U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view text) noexcept;

// The deepest nesting of arrays and objects in the JSON `text`, counting no further than
// `limit` + 1, so that a hostile text costs one pass however deep it goes. Only has to be
// right for valid JSON: a parser refuses anything else afterwards.
[[nodiscard]] std::size_t json_nesting_depth(std::string_view text, std::size_t limit) noexcept;

// Whether the JSON `text` holds the escape \u0000 (a NUL code point in a string), which
// PostgreSQL's jsonb refuses. Only has to be right for valid JSON.
[[nodiscard]] bool json_text_has_nul(std::string_view text) noexcept;

// Why `value` is not a W3C traceparent the node keeps, or nullopt when it is: version 00
// layout "vv-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lowercase hex, version
// not ff, neither id all zeros (the outbox table's check says the same).
[[nodiscard]] std::optional<std::string> traceparent_problem(std::string_view value);
// The trace id of a valid traceparent (its 32 hex digits); empty for anything else.
[[nodiscard]] std::string_view trace_id_of(std::string_view traceparent) noexcept;

// Why `value` cannot serve as an identifier (a key, a name, a route), or nullopt when it
// can: "is empty", "is longer than N bytes", "contains a NUL byte", "is not valid UTF-8".
// PostgreSQL text cannot hold a NUL, and libpq would cut a parameter at it silently.
[[nodiscard]] std::optional<std::string> identifier_problem(std::string_view value,
                                                            std::size_t max_bytes);

// Free text (an error message) made safe to store and show: NUL bytes and bytes that are
// not UTF-8 become U+FFFD, and text longer than `max_bytes` is cut at a character boundary
// and marked with "…". The result is at most `max_bytes` long.
[[nodiscard]] std::string sanitize_text(std::string_view text, std::size_t max_bytes);

// `text` for a log line: one line, printable, bounded. Control characters, quotes,
// backslashes and bytes that are not UTF-8 are escaped (\n, \", \\, \xNN), as are
// characters that change how a line reads without showing (C1 controls, U+2028/2029,
// bidirectional overrides, zero-width marks: \uNNNN). Output stops once it has reached
// `max_bytes` (the last escape may pass it by a few bytes) and is marked with "…". A client
// cannot forge a log line or a field with it.
[[nodiscard]] std::string log_safe(std::string_view text, std::size_t max_bytes = 200);

}  // namespace outboxd::util
