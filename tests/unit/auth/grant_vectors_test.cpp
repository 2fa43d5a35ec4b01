// What a grant may, by the shared vectors in tests/vectors/grant_may.json: the console's
// access.js decides what to offer by the same rules, and its browser test runs the same file.

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "outboxd/auth/grant.hpp"

using namespace outboxd;
using auth::Grant;
using auth::Role;
using nlohmann::json;

namespace {

json vectors() {
    std::ifstream in{std::string{OUTBOXD_SOURCE_DIR} + "/tests/vectors/grant_may.json"};
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
}

Role role_of(const json& name) {
    const auto role = auth::parse_role(name.get<std::string>());
    REQUIRE(role.has_value());
    return *role;
}

Grant grant_of(const json& scopes) {
    Grant grant;
    for (const auto& s : scopes) {
        auth::Scope scope{s["namespace"].get<std::string>(), {}};
        for (const auto& name : s["roles"]) scope.roles.add(role_of(name));
        grant.scopes.push_back(std::move(scope));
    }
    return grant;
}

// What a check asks: null, the role over some namespace; "*", over every one (as the routes
// that need it everywhere ask); else over that one.
bool asks(const Grant& grant, Role role, const json& ns) {
    if (ns.is_null()) return grant.may_somewhere(role);
    const auto name = ns.get<std::string>();
    return name == auth::kAllNamespaces ? grant.may_everywhere(role) : grant.may(role, name);
}

}  // namespace

TEST_CASE("a grant may what the shared vectors say", "[unit][auth]") {
    const auto all = vectors();
    REQUIRE_FALSE(all["cases"].empty());
    for (const auto& c : all["cases"]) {
        const auto grant = grant_of(c["scopes"]);
        for (const auto& check : c["checks"]) {
            const auto role = role_of(check["role"]);
            INFO(c["name"].get<std::string>() << ": " << check.dump());
            CHECK(asks(grant, role, check["namespace"]) == check["may"].get<bool>());
        }
    }
}
