#pragma once

// `outboxd ctl …`: the operator's command line over a node's HTTP API (README, "Operator
// CLI"). Exit status: 0 done, 1 the API refused or failed the request (its error is printed),
// 2 bad usage, 3 the node could not be reached or answered something that is not the API.

#include <iosfwd>

namespace outboxd::ctl {

// `argv[0]` is "ctl"; the rest are its words. Reads OUTBOXD_URL, OUTBOXD_DATABASE and
// OUTBOXD_TOKEN or OUTBOXD_ADMIN_TOKEN (or their _FILE forms).
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace outboxd::ctl
