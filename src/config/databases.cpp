#include "databases.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "convert.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::config {
namespace detail {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kMaxNameLength = 32;
// A node opens connections per database: far more would exhaust any server's budget.
constexpr std::size_t kMaxDatabases = 256;

// How much of a name or key a refusal quotes: enough to find it, never a megabyte.
constexpr std::size_t kQuoted = 64;

[[noreturn]] void refuse_databases(const std::string& problem) { refuse(kDatabases, problem); }

std::string excerpt(const std::string& text) { return util::log_safe(text, kQuoted); }

std::string url_of(const std::string& name, const Json& value, const char* key) {
    if (!value.is_string()) {
        refuse_databases("\"" + name + "\"." + key + " must be a string");
    }
    auto url = value.get<std::string>();
    if (url.empty()) refuse_databases("\"" + name + "\"." + key + " must not be empty");
    if (url.find('\0') != std::string::npos) {
        refuse_databases("\"" + name + "\"." + key + " must not hold a NUL byte");
    }
    return url;
}

Database database_of(const std::string& name, const Json& value) {
    if (!is_database_name(name)) {
        refuse_databases("a database name must match [a-z0-9_-]{1,32}, got '" + excerpt(name) +
                         "'");
    }
    if (value.is_string()) return {name, url_of(name, value, "url"), {}};
    if (!value.is_object()) {
        refuse_databases("\"" + name + "\" must be a connection string or an object " +
                         "{\"url\",\"listen_url\"}");
    }
    Database database{name, {}, {}};
    for (const auto& [key, field] : value.items()) {
        if (key == "url") {
            database.url = url_of(name, field, "url");
        } else if (key == "listen_url") {
            database.listen_url = url_of(name, field, "listen_url");
        } else {
            refuse_databases("\"" + name + "\" has an unknown key '" + excerpt(key) +
                             "' (url and listen_url are known)");
        }
    }
    if (database.url.empty()) refuse_databases("\"" + name + "\" needs a \"url\"");
    return database;
}

}  // namespace

bool is_database_name(const std::string& name) {
    if (name.empty() || name.size() > kMaxNameLength) return false;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::vector<Database> parse_databases(const std::string& text) {
    // Duplicate names are refused, not silently merged: JSON parsers keep the last one.
    std::set<std::string> seen;
    std::string duplicate;
    const Json::parser_callback_t keys = [&](int depth, Json::parse_event_t event, Json& parsed) {
        if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string()) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
        }
        return true;
    };
    Json json;
    try {
        json = Json::parse(text, keys);
    } catch (const Json::parse_error& error) {
        // The byte offset, not the message: the message may quote the text (a password).
        refuse_databases("is not valid JSON (at byte " + std::to_string(error.byte) + ")");
    }
    if (!duplicate.empty()) refuse_databases("names database '" + excerpt(duplicate) + "' twice");
    if (!json.is_object()) refuse_databases("must be a JSON object of name: connection string");
    if (json.empty()) refuse_databases("must name at least one database");
    if (json.size() > kMaxDatabases) {
        refuse_databases("names " + std::to_string(json.size()) + " databases; at most " +
                         std::to_string(kMaxDatabases));
    }
    std::vector<Database> databases;
    std::set<std::string> urls;
    for (const auto& [name, value] : json.items()) {
        auto database = database_of(name, value);
        // Two names for one database would be two members of its cluster under one node id.
        if (!urls.insert(database.url).second) {
            refuse_databases("\"" + name + "\" has the same url as an earlier database");
        }
        databases.push_back(std::move(database));
    }
    return databases;
}

void check_databases(const Config& config) {
    if (!config.databases.empty() && !config.database_url.empty()) {
        throw ConfigError(label(kDatabases) + " and " + label(kDatabaseUrl) +
                          " are both set; set only one (--database-url is one database named "
                          "\"default\")");
    }
    if (config.control_database.empty()) return;
    if (config.databases.empty()) {
        if (config.control_database != "default") {
            refuse(kControlDatabase,
                   "names '" + config.control_database + "', but the only database is \"default\"");
        }
        return;
    }
    for (const auto& database : config.databases) {
        if (database.name == config.control_database) return;
    }
    refuse(kControlDatabase,
           "names '" + config.control_database + "', which is not in " + label(kDatabases));
}

}  // namespace detail

std::vector<Database> served_databases(const Config& config) {
    if (!config.databases.empty()) return config.databases;
    return {Database{"default", config.database_url, {}}};
}

const Database& control_database(const std::vector<Database>& served, const Config& config) {
    for (const auto& database : served) {
        if (database.name == config.control_database) return database;
    }
    return served.front();
}

}  // namespace outboxd::config
