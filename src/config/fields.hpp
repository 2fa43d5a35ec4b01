#pragma once

// One entry per Config field: its setting, its --help text, how its default reads and how
// its raw text becomes the typed value. Options::bind and Options::resolve walk this table.
// Internal to src/config.

#include <string>
#include <string_view>
#include <vector>

#include "outboxd/config/config.hpp"
#include "setting.hpp"

namespace outboxd::config::detail {

struct Field {
    Setting setting;
    std::string_view type_name;  // shown in --help, e.g. "MS"
    std::string_view help;
    // An empty value means "use the default" (demo database, derived node id and URL).
    // Elsewhere an empty value is refused: an empty token would silently open the node.
    bool empty_means_default = false;
    std::string (*show_default)(const Config& defaults) = nullptr;
    void (*apply)(const std::string& text, Config& config) = nullptr;  // throws ConfigError
    // A secret's file twin (--x-file, X_FILE), whose file holds the value; empty key: none.
    Setting file{};
};

// Every setting, in --help order.
[[nodiscard]] const std::vector<Field>& fields();

}  // namespace outboxd::config::detail
