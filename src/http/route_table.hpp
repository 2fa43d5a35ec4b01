#pragma once

// The HTTP API as a table: each route is a method, a path pattern, who may call it and its
// handler. The router decides everything from the table: which route answers, what a path
// needs (before the body is read, and again for the request), 404 and 405. Loop thread only.
//
// Patterns: "/v1/outbox/{key}" — a literal segment matches itself, "{name}" any one segment
// (its value goes to the handler, in order), and a last "{rest...}" any number of segments,
// none included.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api_types.hpp"

namespace outboxd::http {

// Who may call a route.
enum class Access {
    open,    // anyone: probes, metrics, the console's files
    worker,  // the worker or the admin token (workers discover the cluster)
    admin,   // the admin token
};

// What a handler is given of its request.
struct RouteRequest {
    const ApiRequest& request;
    const ParsedTarget& target;
    std::vector<std::string> params;  // the pattern's {…} segments, in order
    bool trailing_slash = false;      // the path ended with '/'
};
using RouteHandler = std::function<void(const RouteRequest&, Respond)>;

struct Route {
    std::string method;  // "GET", "POST", …
    std::string pattern;
    Access access = Access::admin;
    RouteHandler handler;
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
        // Who may call it: the route's; for a path no route takes with this method, the
        // strictest of its routes; for an unknown path, `unknown`.
        Access access = Access::admin;
    };
    [[nodiscard]] Found find(std::string_view method, const std::vector<std::string>& segments,
                             Access unknown) const;

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
