#include "outboxd/dispatch/fair_share.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

namespace outboxd::dispatch {
namespace {

// A namespace may bank at most this many rounds' worth of what it is owed: enough to make
// up for rounding, not enough to hoard a burst.
constexpr double kMaxRoundsOwed = 2.0;

}  // namespace

std::vector<std::int64_t> FairShare::deal(const std::vector<Demand>& demands, std::int64_t budget) {
    std::vector<std::int64_t> rows(demands.size(), 0);
    // Only those with work this round are owed anything; the rest forget what they had.
    std::set<std::string> present;
    double total_weight = 0;
    for (const auto& demand : demands) {
        if (demand.room > 0) {
            total_weight += static_cast<double>(std::max<std::int64_t>(demand.weight, 1));
            present.insert(demand.namespace_name);
        }
    }
    std::erase_if(accounts_,
                  [&present](const auto& entry) { return !present.contains(entry.first); });
    ++round_;
    if (budget <= 0 || total_weight <= 0) return rows;

    const double batch = static_cast<double>(budget);
    std::int64_t left = budget;
    for (std::size_t i = 0; i < demands.size(); ++i) {
        const auto& demand = demands[i];
        if (demand.room <= 0) continue;
        const double quantum =
            batch * static_cast<double>(std::max<std::int64_t>(demand.weight, 1)) / total_weight;
        double& owed = accounts_[demand.namespace_name].owed;
        owed = std::min(owed + quantum, kMaxRoundsOwed * std::max(quantum, 1.0));
        rows[i] = std::min({demand.room, static_cast<std::int64_t>(std::floor(owed)), left});
        left -= rows[i];
    }
    // Work conserving: rows nobody was owed in whole go one at a time to whoever is owed the
    // most of what remains (among equals, whoever waited longest), within its room.
    using Entry = std::tuple<double, std::uint64_t, std::size_t>;  // owed left, -served, index
    std::priority_queue<Entry> queue;
    for (std::size_t i = 0; i < demands.size(); ++i) {
        if (rows[i] < demands[i].room) {
            const auto& account = accounts_[demands[i].namespace_name];
            const double rest = account.owed - static_cast<double>(rows[i]);
            queue.emplace(rest, ~account.served, i);
        }
    }
    while (left > 0 && !queue.empty()) {
        auto [rest, tie, i] = queue.top();
        queue.pop();
        ++rows[i];
        --left;
        if (rows[i] < demands[i].room) queue.emplace(rest - 1.0, tie, i);
    }
    for (std::size_t i = 0; i < demands.size(); ++i) {
        if (demands[i].room <= 0) continue;
        auto& account = accounts_[demands[i].namespace_name];
        // Its backlog ran dry: it is owed nothing for the rounds it had nothing to take.
        account.owed =
            rows[i] >= demands[i].room ? 0.0 : account.owed - static_cast<double>(rows[i]);
        if (rows[i] > 0) account.served = round_;
    }
    return rows;
}

void FairShare::refund(const std::string& namespace_name, std::int64_t rows) {
    if (rows <= 0) return;
    if (auto it = accounts_.find(namespace_name); it != accounts_.end())
        it->second.owed += static_cast<double>(rows);
}

double FairShare::owed(const std::string& namespace_name) const {
    const auto it = accounts_.find(namespace_name);
    return it == accounts_.end() ? 0.0 : it->second.owed;
}

}  // namespace outboxd::dispatch
