#pragma once

// OUTBOXD_DATABASES: the named outbox databases of a node, as JSON. Internal to src/config.

#include <string>
#include <vector>

#include "outboxd/config/config.hpp"

namespace outboxd::config::detail {

// The databases `text` names, in the order given. Throws ConfigError naming the setting and
// what is wrong (a name, a key), never a URL: it may hold a password.
[[nodiscard]] std::vector<Database> parse_databases(const std::string& text);

// [a-z0-9_-]{1,32}
[[nodiscard]] bool is_database_name(const std::string& name);

// The rules across settings: not with --database-url, a known control database.
void check_databases(const Config& config);

}  // namespace outboxd::config::detail
