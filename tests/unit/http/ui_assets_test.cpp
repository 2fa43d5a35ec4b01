// The console's embedded files and how /ui answers (src/http/ui_assets.hpp).

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "http/ui_assets.hpp"

using namespace outboxd::http;

namespace {

std::string header(const ApiResponse& response, const std::string& name) {
    for (const auto& [key, value] : response.headers) {
        if (key == name) return value;
    }
    return {};
}

}  // namespace

TEST_CASE("console files get their content type by extension", "[unit][console]") {
    CHECK(ui_content_type("index.html") == "text/html; charset=utf-8");
    CHECK(ui_content_type("app.js") == "text/javascript; charset=utf-8");
    CHECK(ui_content_type("app.css") == "text/css; charset=utf-8");
    CHECK(ui_content_type("icon.svg") == "image/svg+xml");
    CHECK(ui_content_type("README") == "application/octet-stream");
    CHECK(ui_content_type("app.js.map.x") == "application/octet-stream");
}

TEST_CASE("/ui redirects to /ui/, serves index.html there, and 404s anything else",
          "[unit][console]") {
    const auto moved = ui_response({}, false);
    CHECK(moved.status == 308);
    CHECK(header(moved, "Location") == "/ui/");

    const std::vector<std::string> missing{"no-such.js"};
    const auto absent = ui_response(missing, false);
    CHECK(absent.status == 404);
    CHECK(header(absent, "Content-Security-Policy").starts_with("default-src 'self'"));

    const std::vector<std::string> nested{"a", "index.html"};
    CHECK(ui_response(nested, false).status == 404);

    const auto assets = ui_assets();
    for (std::size_t i = 1; i < assets.size(); ++i) CHECK(assets[i - 1].name < assets[i].name);
    for (const auto& asset : assets) {
        const std::vector<std::string> name{std::string{asset.name}};
        const auto served = ui_response(name, false);
        CHECK(served.status == 200);
        CHECK(served.content_type == ui_content_type(asset.name));
        CHECK(served.body.size() == asset.bytes.size());
        CHECK(header(served, "X-Content-Type-Options") == "nosniff");
    }
    const auto index = ui_response({}, true);
    if (assets.empty()) {
        CHECK(index.status == 404);
    } else {
        CHECK(index.status == 200);
        CHECK(index.content_type == "text/html; charset=utf-8");
    }
}
