#pragma once

// Per-namespace tenant settings (quota, placement, weight) cached on the loop thread and refreshed
// from PostgreSQL every `ttl`, so a changed quota or placement takes effect within it.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/dispatch/db_lane.hpp"
#include "outboxd/store/placement.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::dispatch {

class NamespaceCache {
public:
    NamespaceCache(boost::asio::any_io_executor loop, DbLane& lane,
                   std::int64_t default_max_in_flight, std::chrono::milliseconds ttl);

    void start();  // first refresh now, then every ttl
    void stop();
    void refresh_now();

    [[nodiscard]] std::int64_t quota(const std::string& ns) const;
    [[nodiscard]] store::Placement placement(const std::string& ns) const;
    [[nodiscard]] std::int64_t weight(const std::string& ns) const;
    // For tests: replace the cached settings without the database.
    void set(const std::string& ns, std::int64_t quota, store::Placement placement);

private:
    struct Entry {
        std::int64_t quota = 0;
        store::Placement placement;
        std::int64_t weight = 1;
    };
    void schedule();
    void refresh_failed(const std::string& error);

    boost::asio::any_io_executor loop_;
    DbLane& lane_;
    std::int64_t default_max_in_flight_;
    std::chrono::milliseconds ttl_;
    std::map<std::string, Entry> entries_;
    util::FailureRun failures_;
    boost::asio::steady_timer timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
