#pragma once

// Per-namespace tenant settings (quota, placement, weight) cached on the loop thread and refreshed
// from PostgreSQL every `ttl`, so a changed quota or placement takes effect within it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "outboxd/store/delivery_controls.hpp"
#include "outboxd/store/lanes.hpp"
#include "outboxd/store/placement.hpp"
#include "outboxd/util/failure_run.hpp"
#include "outboxd/util/lifetime.hpp"

namespace outboxd::dispatch {

class NamespaceCache {
public:
    // `database` names its refreshes in the log.
    NamespaceCache(boost::asio::any_io_executor loop, store::AdminLane& lane,
                   std::int64_t default_max_in_flight, std::chrono::milliseconds ttl,
                   std::string database = "default");

    void start();  // first refresh now, then every ttl
    void stop();
    // Reads the settings now; `done` (if any) runs on the loop once they are applied, or the
    // read failed, or the lane refused it.
    void refresh_now(const std::function<void()>& done = nullptr);

    [[nodiscard]] std::int64_t quota(const std::string& ns) const;
    [[nodiscard]] store::Placement placement(const std::string& ns) const;
    [[nodiscard]] std::int64_t weight(const std::string& ns) const;
    // Whether its rows' results are stored (true for a namespace never set).
    [[nodiscard]] bool keep_results(const std::string& ns) const;
    // Its delivery controls (ordering, limits); the defaults for a namespace never set.
    [[nodiscard]] const store::DeliveryControls& controls(const std::string& ns) const;
    // Whether any namespace has a control set (claims take the plain path while none has).
    [[nodiscard]] bool any_controls() const { return any_controls_; }
    // Whether the settings were read once: until then nothing is known of any namespace's
    // controls, and nothing may be claimed (an ordered namespace would be claimed unordered).
    [[nodiscard]] bool loaded() const { return loaded_; }
    // Runs on the loop when the settings were first read.
    void on_loaded(std::function<void()> callback) { on_loaded_ = std::move(callback); }
    // The namespaces with ordered delivery, those whose dead letters skip and those whose
    // dead letters block.
    [[nodiscard]] std::pair<std::vector<std::string>, std::vector<std::string>> ordered() const;
    // For tests: replace the cached settings without the database (and count as loaded).
    void set(const std::string& ns, std::int64_t quota, store::Placement placement,
             store::DeliveryControls controls = {});

private:
    struct Entry {
        std::int64_t quota = 0;
        store::Placement placement;
        std::int64_t weight = 1;
        store::DeliveryControls controls;
        bool keep_results = true;
    };
    void schedule();
    void apply(const store::LaneResult<std::vector<store::NamespaceSettings>>& listed);
    void refresh_failed(const std::string& error);

    boost::asio::any_io_executor loop_;
    store::AdminLane& lane_;
    std::int64_t default_max_in_flight_;
    std::string database_;
    std::chrono::milliseconds ttl_;
    std::map<std::string, Entry> entries_;
    bool any_controls_ = false;
    bool loaded_ = false;
    std::function<void()> on_loaded_;
    util::FailureRun failures_;
    boost::asio::steady_timer timer_;
    util::Lifetime lifetime_;
};

}  // namespace outboxd::dispatch
