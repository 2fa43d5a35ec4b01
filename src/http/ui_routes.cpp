// The web console's files (README, "Web console"), embedded in the binary.

#include <algorithm>
#include <array>
#include <utility>

#include "api_routes.hpp"
#include "ui_assets.hpp"

namespace outboxd::http {
namespace {

// The page's own scripts and styles only, and API calls to this node only.
constexpr std::string_view kPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

ApiResponse with_headers(ApiResponse response) {
    response.headers.emplace_back("Content-Security-Policy", std::string{kPolicy});
    response.headers.emplace_back("X-Content-Type-Options", "nosniff");
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    // The files change with the binary, which a rolling upgrade swaps under the same URL.
    response.headers.emplace_back("Cache-Control", "no-cache");
    return response;
}

}  // namespace

std::string_view ui_content_type(std::string_view name) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTypes{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".json", "application/json"},
    }};
    for (const auto& [extension, type] : kTypes) {
        if (name.ends_with(extension)) return type;
    }
    return "application/octet-stream";
}

ApiResponse ui_response(std::span<const std::string> rest, bool trailing_slash) {
    if (rest.empty() && !trailing_slash) {
        ApiResponse moved{308, "text/plain; charset=utf-8", "see /ui/\n", {}};
        moved.headers.emplace_back("Location", "/ui/");
        return with_headers(std::move(moved));
    }
    if (rest.size() > 1) {
        return with_headers(error_response(404, "not_found", "the console has no such file"));
    }
    const std::string_view name = rest.empty() ? std::string_view{"index.html"} : rest[0];
    const auto assets = ui_assets();
    const auto found = std::find_if(assets.begin(), assets.end(),
                                    [name](const UiAsset& asset) { return asset.name == name; });
    if (found == assets.end()) {
        return with_headers(error_response(404, "not_found", "the console has no such file"));
    }
    const auto* bytes = reinterpret_cast<const char*>(found->bytes.data());
    return with_headers(ApiResponse{
        200, std::string{ui_content_type(name)}, std::string{bytes, found->bytes.size()}, {}});
}

void add_ui_routes(RouteTable& table) {
    table.add({"GET", "/ui/{file...}", Access::anyone(),
               [](const RouteRequest& r, const Respond& respond) {
                   respond(ui_response(r.params, r.trailing_slash));
               }});
}

}  // namespace outboxd::http
