#include "outboxd/dispatch/namespace_cache.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace outboxd::dispatch {

NamespaceCache::NamespaceCache(boost::asio::any_io_executor loop, DbLane& lane,
                               std::int64_t default_max_in_flight, std::chrono::milliseconds ttl)
    : loop_(loop),
      lane_(lane),
      default_max_in_flight_(default_max_in_flight),
      ttl_(ttl),
      timer_(loop),
      alive_(std::make_shared<NamespaceCache*>(this)) {}

NamespaceCache::~NamespaceCache() { *alive_ = nullptr; }

void NamespaceCache::start() {
    refresh_now();
    schedule();
}

void NamespaceCache::stop() { timer_.cancel(); }

void NamespaceCache::schedule() {
    timer_.expires_after(std::max(ttl_, std::chrono::milliseconds{50}));
    timer_.async_wait([alive = std::weak_ptr<NamespaceCache*>(alive_)](auto ec) {
        const auto self = alive.lock();
        if (ec || !self || !*self) return;
        (*self)->refresh_now();
        (*self)->schedule();
    });
}

void NamespaceCache::refresh_now() {
    lane_.submit([alive = std::weak_ptr<NamespaceCache*>(alive_), loop = loop_](DbHandles db) {
        std::vector<store::NamespaceSettings> settings;
        try {
            settings = db.outbox.list_namespaces();
        } catch (const std::exception& error) {
            spdlog::warn("event=namespace_refresh_failed error=\"{}\"", error.what());
            return;  // keep the last known settings
        }
        boost::asio::post(loop, [alive, settings = std::move(settings)] {
            const auto self = alive.lock();
            if (!self || !*self) return;
            std::map<std::string, Entry> fresh;
            for (const auto& s : settings) {
                Entry entry;
                entry.quota = s.max_in_flight.value_or((*self)->default_max_in_flight_);
                worker::PlacementMode mode = worker::PlacementMode::unplaced;
                (void)worker::parse_placement_mode(s.placement_mode, mode);
                entry.placement = {mode, s.placement_nodes};
                fresh.emplace(s.name, std::move(entry));
            }
            (*self)->entries_ = std::move(fresh);
        });
    });
}

std::int64_t NamespaceCache::quota(const std::string& ns) const {
    const auto it = entries_.find(ns);
    return it == entries_.end() ? default_max_in_flight_ : it->second.quota;
}

worker::Placement NamespaceCache::placement(const std::string& ns) const {
    const auto it = entries_.find(ns);
    return it == entries_.end() ? worker::Placement{} : it->second.placement;
}

void NamespaceCache::set(const std::string& ns, std::int64_t quota, worker::Placement placement) {
    entries_[ns] = {quota, std::move(placement)};
}

}  // namespace outboxd::dispatch
