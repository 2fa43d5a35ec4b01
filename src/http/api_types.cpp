#include "api_types.hpp"

#include <array>

#include <nlohmann/json.hpp>

#include "outboxd/util/untrusted_text.hpp"
#include "time_format.hpp"

namespace outboxd::http {
namespace {

// How much of a parameter's name an error message echoes.
constexpr std::size_t kEchoedNameBytes = 64;

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '%') {
            if (i + 2 >= text.size()) return std::nullopt;
            const auto hex = [](char h) -> int {
                if (h >= '0' && h <= '9') return h - '0';
                if (h >= 'a' && h <= 'f') return h - 'a' + 10;
                if (h >= 'A' && h <= 'F') return h - 'A' + 10;
                return -1;
            };
            const int hi = hex(text[i + 1]);
            const int lo = hex(text[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

std::string json_text(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json optional_json(const std::optional<std::string>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json optional_time(const std::optional<store::TimePoint>& value) {
    return value ? nlohmann::json(format_rfc3339(*value)) : nlohmann::json(nullptr);
}

ApiResponse error_response(int status, std::string_view code, std::string_view message) {
    nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
    return {status, "application/json", json_text(body)};
}

std::variant<ParsedTarget, TargetError> parse_target(std::string_view target) {
    const auto checked = [](std::optional<std::string> decoded,
                            std::string_view what) -> std::variant<std::string, TargetError> {
        if (!decoded)
            return TargetError{"malformed percent-encoding in the URL " + std::string{what}};
        if (decoded->find('\0') != std::string::npos) {
            return TargetError{"the URL " + std::string{what} + " holds a NUL byte"};
        }
        if (!util::is_valid_utf8(*decoded)) {
            return TargetError{"the URL " + std::string{what} + " is not valid UTF-8"};
        }
        return std::move(*decoded);
    };
    // Only the origin form names a resource here: "metrics" is not "/metrics".
    if (!target.starts_with('/')) {
        return TargetError{"the request target must be a path starting with '/'"};
    }
    ParsedTarget parsed;
    const auto question = target.find('?');
    const std::string_view path = target.substr(0, question);
    std::size_t start = 0;
    while (start <= path.size()) {
        const auto slash = path.find('/', start);
        const auto piece = path.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (!piece.empty()) {
            auto decoded = checked(percent_decode(piece, false), "path");
            if (auto* error = std::get_if<TargetError>(&decoded)) return std::move(*error);
            parsed.segments.push_back(std::get<std::string>(std::move(decoded)));
        }
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    if (question != std::string_view::npos) {
        std::string_view query = target.substr(question + 1);
        while (!query.empty()) {
            const auto amp = query.find('&');
            const auto pair = query.substr(0, amp);
            const auto eq = pair.find('=');
            auto key = checked(percent_decode(pair.substr(0, eq), true), "query");
            if (auto* error = std::get_if<TargetError>(&key)) return std::move(*error);
            auto& name = std::get<std::string>(key);
            auto value = checked(
                percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true),
                "query parameter '" + util::sanitize_text(name, kEchoedNameBytes) + "'");
            if (auto* error = std::get_if<TargetError>(&value)) return std::move(*error);
            if (!name.empty()) {
                if (parsed.query.contains(name)) parsed.repeated.insert(name);
                parsed.query[name] = std::get<std::string>(std::move(value));
            }
            if (amp == std::string_view::npos) break;
            query.remove_prefix(amp + 1);
        }
    }
    return parsed;
}

}  // namespace outboxd::http
