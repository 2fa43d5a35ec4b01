#pragma once

// Conversion of a setting's raw text (flag or environment value) into its typed value, and
// the range checks validate() shares. Every failure throws ConfigError naming the setting and,
// except for secrets, the offending value. Internal to src/config.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "outboxd/config/config.hpp"
#include "setting.hpp"

namespace outboxd::config::detail {

// Throws ConfigError("<label>: <problem>").
[[noreturn]] void refuse(const Setting& setting, std::string_view problem);

// An integer within [setting.min, setting.max]; no sign, space or suffix besides a leading '-'.
[[nodiscard]] std::int64_t to_integer(const Setting& setting, const std::string& text);
// A finite number within [setting.min, setting.max].
[[nodiscard]] double to_number(const Setting& setting, const std::string& text);
// true/false, 1/0, yes/no (any case).
[[nodiscard]] bool to_boolean(const Setting& setting, const std::string& text);
// debug, info, warn or error (any case); returned in lower case.
[[nodiscard]] std::string to_log_level(const Setting& setting, const std::string& text);

[[nodiscard]] bool is_log_level(std::string_view level);

// The content of the file at `path`, named by `file` (a secret's file twin), as
// util::read_secret_file reads it. Refuses a file that cannot be read, is empty or too
// large, naming the setting and the path, never the content.
[[nodiscard]] std::string read_setting_file(const Setting& file, const std::string& path);

// Refuses a typed value outside [setting.min, setting.max].
template <typename Integer>
void check_range(const Setting& setting, Integer value) {
    if (std::cmp_less(value, setting.min) || std::cmp_greater(value, setting.max)) {
        refuse(setting, "must be between " + std::to_string(setting.min) + " and " +
                            std::to_string(setting.max) + ", got " + std::to_string(value));
    }
}

}  // namespace outboxd::config::detail
