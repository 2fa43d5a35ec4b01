#pragma once

// The web console's files, compiled into the binary from src/http/ui/ (cmake/EmbedUi.cmake),
// and how they are answered at /ui.

#include <span>
#include <string_view>

#include "api_types.hpp"

namespace outboxd::http {

struct UiAsset {
    std::string_view name;  // file name, e.g. "app.js"
    std::span<const unsigned char> bytes;
};

// Every embedded file, sorted by name (generated).
[[nodiscard]] std::span<const UiAsset> ui_assets();

// The Content-Type for a file name, by its extension (application/octet-stream when unknown).
[[nodiscard]] std::string_view ui_content_type(std::string_view name);

// GET /ui and /ui/… : `rest` holds the path segments after "ui"; `trailing_slash` whether the
// target ended with '/'. /ui redirects to /ui/, which is index.html; a name not embedded is a
// 404. Every answer carries the console's security headers (a strict Content-Security-Policy:
// the page runs its own scripts only, and talks to this node only).
[[nodiscard]] ApiResponse ui_response(std::span<const std::string> rest, bool trailing_slash);

}  // namespace outboxd::http
