#include "outboxd/util/untrusted_text.hpp"

#include <algorithm>

namespace outboxd::util {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";     // U+2026

// Length of the well-formed UTF-8 sequence starting at `at`, or 0 when there is none.
std::size_t sequence_length(std::string_view text, std::size_t at) noexcept {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(at);
    if (lead < 0x80) return 1;
    std::size_t length = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) lo = 0xA0;  // overlong
        if (lead == 0xED) hi = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) lo = 0x90;  // overlong
        if (lead == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
        return 0;
    }
    if (at + length > text.size()) return 0;
    if (byte(at + 1) < lo || byte(at + 1) > hi) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
    }
    return length;
}

// The code point of a well-formed sequence of `length` bytes at `at`.
char32_t code_point(std::string_view text, std::size_t at, std::size_t length) noexcept {
    const auto byte = [&](std::size_t i) {
        return static_cast<char32_t>(static_cast<unsigned char>(text[at + i]));
    };
    switch (length) {
        case 1:
            return byte(0);
        case 2:
            return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
        case 3:
            return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
        default:
            return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
                   (byte(3) & 0x3F);
    }
}

// Characters that change how a log line reads without being visible: C1 controls, line and
// paragraph separators, bidirectional overrides and isolates, zero-width marks.
bool invisible(char32_t c) noexcept {
    return (c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029 || (c >= 0x200B && c <= 0x200F) ||
           (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0xFEFF;
}

void append_escaped_byte(std::string& out, unsigned char byte) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
}

}  // namespace

bool is_valid_utf8(std::string_view text) noexcept {
    for (std::size_t i = 0; i < text.size();) {
        const auto length = sequence_length(text, i);
        if (length == 0) return false;
        i += length;
    }
    return true;
}

std::size_t json_nesting_depth(std::string_view text, std::size_t limit) noexcept {
    std::size_t depth = 0;
    std::size_t deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;  // an escaped character never ends the string
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

std::optional<std::string> identifier_problem(std::string_view value, std::size_t max_bytes) {
    if (value.empty()) return "is empty";
    if (value.size() > max_bytes) return "is longer than " + std::to_string(max_bytes) + " bytes";
    if (value.find('\0') != std::string_view::npos) return "contains a NUL byte";
    if (!is_valid_utf8(value)) return "is not valid UTF-8";
    return std::nullopt;
}

std::string sanitize_text(std::string_view text, std::size_t max_bytes) {
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + kReplacement.size());
    // Stops as soon as the text is known not to fit, so a huge input costs little.
    for (std::size_t i = 0; i < text.size() && out.size() <= max_bytes;) {
        const auto length = sequence_length(text, i);
        if (length == 0 || text[i] == '\0') {
            out += kReplacement;
            ++i;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    if (out.size() <= max_bytes) return out;
    if (max_bytes < kEllipsis.size()) return {};
    // Cut at a character boundary (the output is valid UTF-8) and mark the cut.
    std::size_t cut = max_bytes - kEllipsis.size();
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += kEllipsis;
    return out;
}

std::string log_safe(std::string_view text, std::size_t max_bytes) {
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + 8);
    for (std::size_t i = 0; i < text.size();) {
        if (out.size() >= max_bytes) {
            out += kEllipsis;
            break;
        }
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto length = sequence_length(text, i);
        if (byte == '"' || byte == '\\') {
            out += '\\';
            out += static_cast<char>(byte);
        } else if (byte == '\n') {
            out += "\\n";
        } else if (length == 0 || byte < 0x20 || byte == 0x7f) {
            append_escaped_byte(out, byte);
        } else if (const auto c = code_point(text, i, length); invisible(c)) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(c >> shift) & 0xf];
            i += length;
            continue;
        } else {
            out.append(text.substr(i, length));
            i += length;
            continue;
        }
        ++i;
    }
    return out;
}

bool json_text_has_nul(std::string_view text) noexcept {
    // A backslash escapes the next character: `\u0000` is a NUL only after an even run of
    // backslashes before its own (an odd run in all).
    for (auto at = text.find("u0000"); at != std::string_view::npos;
         at = text.find("u0000", at + 1)) {
        std::size_t slashes = 0;
        while (slashes < at && text[at - 1 - slashes] == '\\') ++slashes;
        if (slashes % 2 == 1) return true;
    }
    return false;
}

std::optional<std::string> traceparent_problem(std::string_view value) {
    constexpr std::size_t kLength = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
    if (value.size() != kLength) {
        return "must be 55 characters (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>)";
    }
    const auto hex = [](std::string_view part) {
        return std::all_of(part.begin(), part.end(),
                           [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    };
    const auto zeros = [](std::string_view part) {
        return std::all_of(part.begin(), part.end(), [](char c) { return c == '0'; });
    };
    if (value[2] != '-' || value[35] != '-' || value[52] != '-') {
        return "must be four dash-separated fields: version-trace_id-parent_id-flags";
    }
    const auto version = value.substr(0, 2);
    const auto trace = value.substr(3, 32);
    const auto parent = value.substr(36, 16);
    const auto flags = value.substr(53, 2);
    if (!hex(version) || !hex(trace) || !hex(parent) || !hex(flags)) {
        return "must be lowercase hexadecimal digits between the dashes";
    }
    if (version == "ff") return "version ff is invalid";
    if (zeros(trace)) return "trace id must not be all zeros";
    if (zeros(parent)) return "parent id must not be all zeros";
    return std::nullopt;
}

std::string_view trace_id_of(std::string_view traceparent) noexcept {
    if (traceparent.size() != 55 || traceparent[2] != '-') return {};
    return traceparent.substr(3, 32);
}

}  // namespace outboxd::util
