#pragma once

// What the end of one HTTP push request makes of its task (README, "HTTP push"): 2xx is
// done; 408, 429, 5xx and a failed exchange (timeout, refused, reset, TLS) are retried
// after the usual backoff, `Retry-After` honoured as a minimum; any other status is a dead
// letter. And the request's signature. Pure; the clock is passed in.

#include <chrono>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace outboxd::sinks::http_push {

// The longest wait a Retry-After may ask for; a longer one is cut to it.
inline constexpr std::chrono::milliseconds kMaxRetryAfter = std::chrono::hours{1};
// How much of a response body last_error keeps.
inline constexpr std::size_t kErrorExcerptBytes = 200;

// How one exchange ended.
struct Exchange {
    std::optional<int> status;               // the response's status, when one came
    std::string failure;                     // why no (whole) response came: timeout, refused, …
    std::string body;                        // the response body (bounded by the reader)
    std::optional<std::string> retry_after;  // the Retry-After header, verbatim
};

struct Verdict {
    enum class Kind { done, retry, dead_letter };
    Kind kind = Kind::done;
    std::string error;                       // retry and dead letter: for last_error
    std::chrono::milliseconds min_delay{0};  // retry: wait at least this long (Retry-After)
};

// `now` reads an HTTP-date Retry-After.
[[nodiscard]] Verdict judge(const Exchange& exchange, std::time_t now);

// The result a successful exchange's body gives its task: the body when it is one JSON value
// other than null (compact), at most `max_bytes` of it, that jsonb can hold; nothing
// otherwise (an empty or plain-text body is no result, not an error).
[[nodiscard]] std::optional<std::string> result_of(const Exchange& exchange, std::size_t max_bytes);

// A Retry-After value (delay-seconds or an IMF-fixdate) as a wait from `now`, clamped to
// 0..kMaxRetryAfter; nothing when it is neither.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                                         std::time_t now);

// The prometheus code_class of an exchange: "2xx" … "5xx", "timeout" or "error".
[[nodiscard]] std::string code_class(const Exchange& exchange);

// Outboxd-Signature: "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>".
[[nodiscard]] std::string signature(std::string_view secret, std::int64_t unix_seconds,
                                    std::string_view body);

// Standard Webhooks' webhook-signature: "v1,<base64 HMAC-SHA256(secret, id + "." + t + "." +
// body)>". The secret its verifiers are given is "whsec_" + base64(secret).
[[nodiscard]] std::string standard_webhooks_signature(std::string_view secret, std::string_view id,
                                                      std::int64_t unix_seconds,
                                                      std::string_view body);

// The failure text of a timed-out exchange; code_class() recognises it.
[[nodiscard]] std::string timed_out_after(std::int64_t timeout_ms);

}  // namespace outboxd::sinks::http_push
