#pragma once

// The connection string clients of a chaos run are given: one server, or every server that
// may be primary, of which libpq takes the one that accepts writes (README, "Operating with
// HA PostgreSQL"), so that a client follows a promoted standby without being told.

#include <cstdint>
#include <string>
#include <vector>

namespace outboxd::chaos {

// One port: postgresql://postgres@127.0.0.1:<port>/postgres. Several: "host=127.0.0.1,…
// port=<a>,<b>,… dbname=postgres user=postgres target_session_attrs=read-write". Throws
// std::invalid_argument when `ports` is empty.
[[nodiscard]] std::string database_url(const std::vector<std::uint16_t>& ports);

}  // namespace outboxd::chaos
