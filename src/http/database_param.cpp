#include "database_param.hpp"

#include <string>

namespace outboxd::http {
namespace {

constexpr std::size_t kMaxNameBytes = 32;

// "orders, billing": the names of the databases the node serves, in its order.
std::string served(const engine::EngineDirectory& engines) {
    std::string names;
    for (const auto& engine : engines.engines()) {
        if (!names.empty()) names += ", ";
        names += engine->name();
    }
    return names;
}

ApiResponse bad_parameter(const std::string& why, const engine::EngineDirectory& engines) {
    return error_response(400, "invalid_request",
                          "'database' " + why + " (this node serves: " + served(engines) + ")");
}

}  // namespace

bool is_database_name(std::string_view name) {
    if (name.empty() || name.size() > kMaxNameBytes) return false;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::variant<std::vector<engine::OutboxEngine*>, ApiResponse> choose_databases(
    Databases scope, const ParsedTarget& target, const engine::EngineDirectory& engines,
    std::string_view control) {
    using Chosen = std::vector<engine::OutboxEngine*>;
    if (scope == Databases::none || engines.empty()) return Chosen{};
    const std::string param{kDatabaseParam};
    const auto given = target.query.find(param);
    engine::OutboxEngine* named = nullptr;
    if (given != target.query.end()) {
        // Checked before it is looked up: the message never echoes a value out of shape.
        if (target.repeated.contains(param)) {
            return bad_parameter("is given more than once; name one database", engines);
        }
        if (given->second.empty()) return bad_parameter("is empty; name a database", engines);
        if (!is_database_name(given->second)) {
            return bad_parameter("must be 1-32 of a-z 0-9 _ -", engines);
        }
        named = engines.find(given->second);
        if (!named) {
            return error_response(404, "unknown_database",
                                  "this node serves no database '" + given->second +
                                      "' (it serves: " + served(engines) + ")");
        }
    }
    switch (scope) {
        case Databases::control: {
            auto* found = control.empty() ? nullptr : engines.find(control);
            return Chosen{found ? found : engines.engines().front().get()};
        }
        case Databases::one:
            if (named) return Chosen{named};
            if (engines.engines().size() == 1) return Chosen{engines.engines().front().get()};
            return error_response(400, "database_required",
                                  "this node serves several databases (" + served(engines) +
                                      "): name one with ?database=");
        case Databases::any: {
            if (named) return Chosen{named};
            Chosen every;
            for (const auto& engine : engines.engines()) every.push_back(engine.get());
            return every;
        }
        case Databases::none:
            break;
    }
    return Chosen{};
}

}  // namespace outboxd::http
