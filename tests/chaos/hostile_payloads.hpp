#pragma once

// What a hostile client sends a node: raw bytes and malformed HTTP on fresh connections,
// and frames on freshly upgraded worker sockets. None of it may stage a row a worker could
// run, pause or cancel a workflow the load uses, or change a namespace's settings: the
// garbage must be refused, and the run's invariants hold either way.

#include <string>
#include <vector>

namespace outboxd::chaos {

struct HostileBytes {
    std::string name;
    std::string bytes;  // sent on a fresh TCP connection
};

struct HostileFrames {
    std::string name;
    std::vector<std::string> frames;  // encoded client frames, sent after the upgrade
};

[[nodiscard]] std::vector<HostileBytes> hostile_http_payloads();
[[nodiscard]] std::vector<HostileFrames> hostile_ws_payloads();

// `open` copies of `open_char`, then as many of `close_char` when `closed`.
[[nodiscard]] std::string nested(char open_char, char close_char, std::size_t depth, bool closed);

}  // namespace outboxd::chaos
