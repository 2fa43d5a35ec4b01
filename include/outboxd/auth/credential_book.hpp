#pragma once

// Keeps the authenticator's copy of the managed credentials fresh: reads the control
// database's table now and then every `ttl` on its API lane (one row, its version, when
// nothing changed), and after each read tells
// `on_read` (which closes the worker sessions of credentials deleted or expired since).
// A failed read keeps the last copy.
//
// Thread affinity: the loop thread.

#include <chrono>
#include <functional>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/auth/authenticator.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"
#include "outboxd/util/periodic.hpp"

namespace outboxd::auth {

class CredentialBook {
public:
    CredentialBook(const boost::asio::any_io_executor& loop, store::AdminLane& lane,
                   Authenticator& authenticator, std::chrono::milliseconds ttl,
                   prometheus::Counter& faults);

    void start();  // reads now, then every ttl
    void stop();
    void read_now();
    void on_read(std::function<void()> callback) { on_read_ = std::move(callback); }

private:
    void apply(const store::LaneResult<store::AccessStore::Credentials>& listed);

    boost::asio::any_io_executor loop_;
    store::AdminLane& lane_;
    Authenticator& authenticator_;
    std::function<void()> on_read_;
    std::optional<std::int64_t> version_;  // of the table, as last read whole
    util::FailureRun failures_;
    util::Lifetime lifetime_;
    util::Periodic periodic_;
};

}  // namespace outboxd::auth
