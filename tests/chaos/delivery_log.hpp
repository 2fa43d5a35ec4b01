#pragma once

// Reads the delivery logs outboxd-worker --delivery-log appends:
//   deliver <unix_ms> <task_id> <dispatch_key> <attempt>
//   complete <unix_ms> <task_id> <dispatch_key>
//   fail <unix_ms> <task_id> <dispatch_key>
// A worker killed mid-write can leave a last line without its newline: it is skipped.

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace outboxd::chaos {

struct Delivery {
    std::int64_t at_ms = 0;
    std::string task_id;  // "<row id>.<claim token>"
    std::string dispatch_key;
    std::int32_t attempt = 0;
    std::uint32_t worker = 0;  // index of the log it came from
};

struct DeliveryRecords {
    std::vector<Delivery> deliveries;
    std::unordered_set<std::string> completed;  // task ids answered with complete
    std::size_t failed = 0;                     // fail answers
    std::size_t malformed = 0;                  // lines that did not parse
};

// Appends what `path` holds to `records`, tagging deliveries with `worker`.
void read_delivery_log(const std::string& path, std::uint32_t worker, DeliveryRecords& records);

// Deliveries in `path` not answered yet: tasks in flight at this worker right now.
[[nodiscard]] std::size_t unanswered_deliveries(const std::string& path);

}  // namespace outboxd::chaos
