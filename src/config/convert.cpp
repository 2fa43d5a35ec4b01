#include "convert.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "outboxd/util/secret_file.hpp"

namespace outboxd::config::detail {
namespace {

constexpr std::array<std::string_view, 4> kLogLevels{"debug", "info", "warn", "error"};

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::string bounds(const Setting& setting) {
    return std::to_string(setting.min) + " and " + std::to_string(setting.max);
}

}  // namespace

std::string label(const Setting& setting) {
    return "--" + std::string{setting.key} + " (" + std::string{setting.env} + ")";
}

void refuse(const Setting& setting, std::string_view problem) {
    throw ConfigError(label(setting) + ": " + std::string{problem});
}

std::int64_t to_integer(const Setting& setting, const std::string& text) {
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc{} || stop != end || value < setting.min ||
        value > setting.max) {
        refuse(setting, "must be an integer between " + bounds(setting) + ", got '" + text + "'");
    }
    return value;
}

double to_number(const Setting& setting, const std::string& text) {
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    // from_chars accepts "inf" and "nan"; neither is a usable multiplier.
    if (text.empty() || error != std::errc{} || stop != end || !std::isfinite(value) ||
        value < static_cast<double>(setting.min) || value > static_cast<double>(setting.max)) {
        refuse(setting, "must be a number between " + bounds(setting) + ", got '" + text + "'");
    }
    return value;
}

bool to_boolean(const Setting& setting, const std::string& text) {
    const std::string word = lower(text);
    if (word == "true" || word == "1" || word == "yes") return true;
    if (word == "false" || word == "0" || word == "no") return false;
    refuse(setting, "must be true, false, 1, 0, yes or no, got '" + text + "'");
}

bool is_log_level(std::string_view level) {
    return std::find(kLogLevels.begin(), kLogLevels.end(), level) != kLogLevels.end();
}

std::string to_log_level(const Setting& setting, const std::string& text) {
    std::string level = lower(text);
    if (!is_log_level(level)) {
        refuse(setting, "must be debug, info, warn or error, got '" + text + "'");
    }
    return level;
}

std::string read_setting_file(const Setting& file, const std::string& path) {
    try {
        return util::read_secret_file(path);
    } catch (const std::runtime_error& error) {
        refuse(file, error.what());
    }
}

}  // namespace outboxd::config::detail
