#include "outboxd/sinks/http_push/delivery.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::sinks::http_push {
namespace {

constexpr std::string_view kTimedOut = "timed out after ";

bool retryable_status(int status) { return status == 408 || status == 429 || status >= 500; }

std::string status_error(int status, std::string_view body) {
    std::string error = "HTTP " + std::to_string(status);
    // One line of the body, bounded and safe to store and show.
    std::string excerpt = util::sanitize_text(body, kErrorExcerptBytes);
    std::replace_if(
        excerpt.begin(), excerpt.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; },
        ' ');
    if (!excerpt.empty()) error += ": " + excerpt;
    return error;
}

// "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate) as a time_t.
std::optional<std::time_t> parse_imf_fixdate(std::string_view text) {
    if (text.size() != 29 || text[3] != ',' || text.substr(25) != " GMT") return std::nullopt;
    static constexpr std::array<std::string_view, 12> kMonths{
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const auto number = [&text](std::size_t at, std::size_t length) -> std::optional<int> {
        int value = 0;
        for (std::size_t i = at; i < at + length; ++i) {
            if (text[i] < '0' || text[i] > '9') return std::nullopt;
            value = value * 10 + (text[i] - '0');
        }
        return value;
    };
    const auto day = number(5, 2), year = number(12, 4), hour = number(17, 2),
               minute = number(20, 2), second = number(23, 2);
    const auto month = std::find(kMonths.begin(), kMonths.end(), text.substr(8, 3));
    if (!day || !year || !hour || !minute || !second || month == kMonths.end() || text[19] != ':' ||
        text[22] != ':') {
        return std::nullopt;
    }
    std::tm tm{};
    tm.tm_mday = *day;
    tm.tm_mon = static_cast<int>(month - kMonths.begin());
    tm.tm_year = *year - 1900;
    tm.tm_hour = *hour;
    tm.tm_min = *minute;
    tm.tm_sec = *second;
    return ::timegm(&tm);
}

}  // namespace

std::string timed_out_after(std::int64_t timeout_ms) {
    return std::string{kTimedOut} + std::to_string(timeout_ms) + " ms";
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                           std::time_t now) {
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (value.empty()) return std::nullopt;
    if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        // Digits past what a wait can mean are a wait of the maximum, not an overflow.
        if (value.size() > 9) return kMaxRetryAfter;
        const auto seconds = std::stoll(std::string{value});
        return std::min<std::chrono::milliseconds>(std::chrono::seconds{seconds}, kMaxRetryAfter);
    }
    const auto at = parse_imf_fixdate(value);
    if (!at) return std::nullopt;
    const auto wait = std::chrono::seconds{std::max<std::time_t>(0, *at - now)};
    return std::min<std::chrono::milliseconds>(wait, kMaxRetryAfter);
}

Verdict judge(const Exchange& exchange, std::time_t now) {
    if (!exchange.status) {
        return {Verdict::Kind::retry,
                exchange.failure.empty() ? std::string{"the request failed"} : exchange.failure,
                std::chrono::milliseconds{0}};
    }
    const int status = *exchange.status;
    if (status >= 200 && status < 300) return {};
    if (retryable_status(status)) {
        Verdict verdict{Verdict::Kind::retry, status_error(status, exchange.body),
                        std::chrono::milliseconds{0}};
        if (exchange.retry_after) {
            if (const auto wait = parse_retry_after(*exchange.retry_after, now)) {
                verdict.min_delay = *wait;
            }
        }
        return verdict;
    }
    // 1xx and 3xx (redirects are not followed) end here too: nothing a retry would change.
    return {Verdict::Kind::dead_letter, status_error(status, exchange.body),
            std::chrono::milliseconds{0}};
}

std::string code_class(const Exchange& exchange) {
    if (exchange.status) return std::to_string(*exchange.status / 100) + "xx";
    return exchange.failure.starts_with(kTimedOut) ? "timeout" : "error";
}

namespace {

struct Digest {
    std::array<unsigned char, EVP_MAX_MD_SIZE> bytes{};
    unsigned int length = 0;
};

Digest hmac_sha256(std::string_view secret, std::string_view message) {
    Digest digest;
    ::HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(),
           digest.bytes.data(), &digest.length);
    return digest;
}

}  // namespace

std::string signature(std::string_view secret, std::int64_t unix_seconds, std::string_view body) {
    const auto stamp = std::to_string(unix_seconds);
    std::string message;
    message.reserve(stamp.size() + 1 + body.size());
    message.append(stamp).append(".").append(body);
    const auto digest = hmac_sha256(secret, message);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "t=" + stamp + ",v1=";
    for (unsigned int i = 0; i < digest.length; ++i) {
        out += kHex[digest.bytes[i] >> 4];
        out += kHex[digest.bytes[i] & 0xf];
    }
    return out;
}

std::string standard_webhooks_signature(std::string_view secret, std::string_view id,
                                        std::int64_t unix_seconds, std::string_view body) {
    const auto stamp = std::to_string(unix_seconds);
    std::string message;
    message.reserve(id.size() + stamp.size() + 2 + body.size());
    message.append(id).append(".").append(stamp).append(".").append(body);
    const auto digest = hmac_sha256(secret, message);
    std::string encoded(std::size_t{4} * ((digest.length + 2) / 3), '\0');
    const int written = ::EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                          digest.bytes.data(), static_cast<int>(digest.length));
    encoded.resize(static_cast<std::size_t>(std::max(written, 0)));
    return "v1," + encoded;
}

std::optional<std::string> result_of(const Exchange& exchange, std::size_t max_bytes) {
    if (!exchange.status || *exchange.status < 200 || *exchange.status > 299) return std::nullopt;
    // Parsing is iterative, dumping recursive: a body nesting deeper than a frame may is none.
    const auto limit = worker::protocol::kMaxInputNesting;
    if (exchange.body.empty() || util::json_nesting_depth(exchange.body, limit) > limit) {
        return std::nullopt;
    }
    const auto body = nlohmann::json::parse(exchange.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || body.is_null()) return std::nullopt;
    auto text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > max_bytes || util::json_text_has_nul(text)) return std::nullopt;
    return text;
}

}  // namespace outboxd::sinks::http_push
