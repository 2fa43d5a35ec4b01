#pragma once

// The HTTP API as a table: each route is a method, a path pattern, who may call it and its
// handler. The router decides everything from the table: which route answers, what a path
// needs (before the body is read, and again for the request), 404 and 405. Loop thread only.
//
// Patterns: "/v1/outbox/{key}" — a literal segment matches itself, "{name}" any one segment
// (its value goes to the handler, in order), and a last "{rest...}" any number of segments,
// none included.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api_types.hpp"
#include "outboxd/auth/grant.hpp"

namespace outboxd::engine {
class OutboxEngine;
}

namespace outboxd::http {

// Who may call a route (README, "Security"): anyone, any valid credential, or one that
// holds a role over some namespace (the handler then checks the namespaces it touches) or
// over every namespace.
struct Access {
    enum class Kind { open, signed_in, role };
    Kind kind = Kind::role;
    auth::Role role = auth::Role::admin;
    std::optional<auth::Role> or_role;  // either role will do
    bool everywhere = false;            // the role over '*'

    static Access anyone() { return {Kind::open, auth::Role::admin, std::nullopt, false}; }
    static Access signed_in() { return {Kind::signed_in, auth::Role::admin, std::nullopt, false}; }
    static Access needs(auth::Role role, std::optional<auth::Role> or_role = std::nullopt) {
        return {Kind::role, role, or_role, false};
    }
    static Access needs_everywhere(auth::Role role) {
        return {Kind::role, role, std::nullopt, true};
    }
    bool operator==(const Access&) const = default;
};

// Which of the node's outbox databases a route acts on, from its `?database=` (README,
// "HTTP API"). The router checks the parameter and looks the database up before the handler
// runs; a handler never reads it.
enum class Databases {
    none,     // not a database's route (probes, metrics, the console): the parameter is not read
    one,      // one row, workflow or setting: the named one; required when there are several
    any,      // a listing or a bulk change: the named one, else every one
    control,  // credentials and the audit log: the control database, whatever is named
};

// What a handler is given of its request.
struct RouteRequest {
    const ApiRequest& request;
    const ParsedTarget& target;
    std::vector<std::string> params;  // the pattern's {…} segments, in order
    bool trailing_slash = false;      // the path ended with '/'
    // Who calls: the grant the router admitted (anonymous on an open node; an empty grant
    // on an open route called without a credential).
    std::shared_ptr<const auth::Grant> grant;
    std::string_view route;  // the route's pattern ("/v1/outbox/{key}")
    // The databases it acts on, in the node's order (none for Databases::none): one, or
    // every one for a listing or bulk change that named none. Engines outlive requests.
    std::vector<engine::OutboxEngine*> databases;

    // The one database of a route of Databases::one or ::control.
    [[nodiscard]] engine::OutboxEngine& database() const { return *databases.front(); }
};
using RouteHandler = std::function<void(const RouteRequest&, Respond)>;

struct Route {
    std::string method;  // "GET", "POST", …
    std::string pattern;
    Access access;
    RouteHandler handler;
    Databases databases = Databases::none;
};

class RouteTable {
public:
    void add(Route route);

    // What the table says of a path and method.
    struct Found {
        const Route* route = nullptr;  // none: no route takes this method here
        std::vector<std::string> params;
        // The methods this path takes, for a 405 (empty: no such path).
        std::vector<std::string> methods;
        // Who may call it: the route's; for a path no route takes with this method, or no
        // route at all, `otherwise`.
        Access access;
    };
    [[nodiscard]] Found find(std::string_view method, const std::vector<std::string>& segments,
                             Access otherwise) const;

private:
    struct Compiled {
        Route route;
        std::vector<std::string> segments;  // "{}" for a parameter, "{...}" for the rest
    };
    [[nodiscard]] static bool matches(const Compiled& compiled,
                                      const std::vector<std::string>& segments,
                                      std::vector<std::string>* params);

    std::vector<Compiled> routes_;
};

}  // namespace outboxd::http
