#include "outboxd/dispatch/namespace_cache.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

NamespaceCache::NamespaceCache(boost::asio::any_io_executor loop, store::AdminLane& lane,
                               std::int64_t default_max_in_flight, std::chrono::milliseconds ttl,
                               std::string database)
    : loop_(std::move(loop)),
      lane_(lane),
      default_max_in_flight_(default_max_in_flight),
      database_(std::move(database)),
      ttl_(ttl),
      timer_(loop_) {}

void NamespaceCache::start() {
    refresh_now();
    schedule();
}

void NamespaceCache::stop() { timer_.cancel(); }

void NamespaceCache::schedule() {
    timer_.expires_after(std::max(ttl_, std::chrono::milliseconds{50}));
    timer_.async_wait([this, watch = lifetime_.watch()](auto ec) {
        if (ec || watch.expired()) return;
        refresh_now();
        schedule();
    });
}

void NamespaceCache::refresh_now(const std::function<void()>& done) {
    // Periodic: when the lane is full, the next refresh tries again.
    const bool queued = lane_.call(
        loop_, lifetime_.watch(), [](store::AdminStores& db) { return db.admin.list_namespaces(); },
        [this, done](const store::LaneResult<std::vector<store::NamespaceSettings>>& listed) {
            apply(listed);
            if (done) done();
        });
    if (!queued && done) done();
}

void NamespaceCache::apply(const store::LaneResult<std::vector<store::NamespaceSettings>>& listed) {
    if (!listed.ok()) return refresh_failed(listed.error);  // keep the last known
    if (const auto failed = failures_.succeeded(); failed > 0) {
        spdlog::info("event=namespace_refresh_recovered database={} failures={}", database_,
                     failed);
    }
    std::map<std::string, Entry> fresh;
    bool any = false;
    for (const auto& s : listed.value) {
        Entry entry;
        entry.quota = s.max_in_flight.value_or(default_max_in_flight_);
        entry.placement = s.placement;
        entry.weight = s.weight;
        entry.controls = s.controls;
        entry.keep_results = s.keep_results;
        any = any || s.controls.shapes_claims();
        fresh.emplace(s.name, std::move(entry));
    }
    entries_ = std::move(fresh);
    any_controls_ = any;
    if (!loaded_) {
        loaded_ = true;
        if (on_loaded_) on_loaded_();
    }
}

void NamespaceCache::refresh_failed(const std::string& error) {
    const auto now = std::chrono::steady_clock::now();
    if (failures_.failed(now)) {
        spdlog::warn(
            "event=namespace_refresh_failed database={} failures={} for_ms={} error=\"{}\"",
            database_, failures_.failures(), failures_.lasted(now).count(), util::log_safe(error));
    }
}

std::int64_t NamespaceCache::quota(const std::string& ns) const {
    const auto it = entries_.find(ns);
    return it == entries_.end() ? default_max_in_flight_ : it->second.quota;
}

store::Placement NamespaceCache::placement(const std::string& ns) const {
    const auto it = entries_.find(ns);
    return it == entries_.end() ? store::Placement{} : it->second.placement;
}

bool NamespaceCache::keep_results(const std::string& ns) const {
    const auto it = entries_.find(ns);
    return it == entries_.end() || it->second.keep_results;
}

std::int64_t NamespaceCache::weight(const std::string& ns) const {
    const auto it = entries_.find(ns);
    return it == entries_.end() ? 1 : it->second.weight;
}

const store::DeliveryControls& NamespaceCache::controls(const std::string& ns) const {
    static const store::DeliveryControls none;
    const auto it = entries_.find(ns);
    return it == entries_.end() ? none : it->second.controls;
}

std::pair<std::vector<std::string>, std::vector<std::string>> NamespaceCache::ordered() const {
    std::pair<std::vector<std::string>, std::vector<std::string>> ordered;
    for (const auto& [ns, entry] : entries_) {
        if (entry.controls.ordering != store::Ordering::workflow) continue;
        (entry.controls.on_dead_letter == store::OnDeadLetter::skip ? ordered.first
                                                                    : ordered.second)
            .push_back(ns);
    }
    return ordered;
}

void NamespaceCache::set(const std::string& ns, std::int64_t quota, store::Placement placement,
                         store::DeliveryControls controls) {
    any_controls_ = any_controls_ || controls.shapes_claims();
    entries_[ns] = {quota, std::move(placement), 1, std::move(controls)};
    loaded_ = true;
}

}  // namespace outboxd::dispatch
