#pragma once

// How refusal and load messages quote text they did not write (a token's alg or kid, a
// key file's kid or curve): short, escaped, in single quotes. Internal to src/auth.

#include <cstddef>
#include <string>
#include <string_view>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::auth {

// How much of such a text a message quotes.
inline constexpr std::size_t kQuotedBytes = 64;

[[nodiscard]] inline std::string in_quotes(std::string_view text) {
    return "'" + util::log_safe(text, kQuotedBytes) + "'";
}

}  // namespace outboxd::auth
