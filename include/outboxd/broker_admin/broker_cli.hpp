#pragma once

// `outboxd broker …` (README, "Broker targets"): create a JetStream stream or an AMQP
// exchange with a bound queue for a target to publish to, and count what they hold.

#include <ostream>

namespace outboxd::broker_admin {

// argv[0] is "broker". Returns the exit code: 0 done, 1 the broker failed, 2 a usage error.
int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace outboxd::broker_admin
