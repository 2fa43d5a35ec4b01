#include "route_table.hpp"

#include <algorithm>

namespace outboxd::http {
namespace {

constexpr std::string_view kParam = "{}";
constexpr std::string_view kRest = "{...}";

std::vector<std::string> compile(std::string_view pattern) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < pattern.size()) {
        const auto slash = pattern.find('/', start);
        const auto piece = pattern.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (!piece.empty()) {
            if (piece.ends_with("...}")) {
                out.emplace_back(kRest);
            } else if (piece.starts_with('{')) {
                out.emplace_back(kParam);
            } else {
                out.emplace_back(piece);
            }
        }
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return out;
}

}  // namespace

void RouteTable::add(Route route) {
    auto segments = compile(route.pattern);
    routes_.push_back({std::move(route), std::move(segments)});
}

bool RouteTable::matches(const Compiled& compiled, const std::vector<std::string>& segments,
                         std::vector<std::string>* params) {
    const auto& pattern = compiled.segments;
    const bool rest = !pattern.empty() && pattern.back() == kRest;
    const auto fixed = rest ? pattern.size() - 1 : pattern.size();
    if (segments.size() < fixed || (!rest && segments.size() != fixed)) return false;
    std::vector<std::string> found;
    for (std::size_t i = 0; i < fixed; ++i) {
        if (pattern[i] == kParam) {
            found.push_back(segments[i]);
        } else if (pattern[i] != segments[i]) {
            return false;
        }
    }
    if (rest) {
        for (std::size_t i = fixed; i < segments.size(); ++i) found.push_back(segments[i]);
    }
    if (params) *params = std::move(found);
    return true;
}

RouteTable::Found RouteTable::find(std::string_view method,
                                   const std::vector<std::string>& segments,
                                   Access otherwise) const {
    Found found;
    for (const auto& compiled : routes_) {
        if (!matches(compiled, segments, nullptr)) continue;
        const auto& route = compiled.route;
        if (std::find(found.methods.begin(), found.methods.end(), route.method) ==
            found.methods.end()) {
            found.methods.push_back(route.method);
        }
        if (route.method == method && !found.route) {
            found.route = &route;
            (void)matches(compiled, segments, &found.params);
        }
    }
    found.access = found.route ? found.route->access : otherwise;
    return found;
}

}  // namespace outboxd::http
