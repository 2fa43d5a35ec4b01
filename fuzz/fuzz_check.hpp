#pragma once

// What a fuzz target does when one of its oracles fails: say which property broke, with a
// printable excerpt of the values involved, then abort, so that libFuzzer saves the input as
// a crash exactly as it does for a sanitizer report.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace outboxd::fuzz {

// How much of a value an oracle report shows: enough to recognise it, never a megabyte.
inline constexpr std::size_t kShownBytes = 600;

// `text` as one printable line: bytes outside printable ASCII become \xNN.
[[nodiscard]] inline std::string printable(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < kShownBytes; ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
            out += static_cast<char>(byte);
        } else {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        }
    }
    if (text.size() > kShownBytes) out += "... (" + std::to_string(text.size()) + " bytes)";
    return out;
}

[[noreturn]] inline void broken(std::string_view property, std::string_view detail = {}) {
    std::fprintf(stderr, "\n==outboxd-fuzz== property broken: %.*s\n",
                 static_cast<int>(property.size()), property.data());
    if (!detail.empty()) std::fprintf(stderr, "==outboxd-fuzz== %s\n", printable(detail).c_str());
    std::fflush(stderr);
    std::abort();
}

inline void require(bool holds, std::string_view property, std::string_view detail = {}) {
    if (!holds) broken(property, detail);
}

}  // namespace outboxd::fuzz
