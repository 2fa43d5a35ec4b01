#include "outboxd/store/outbox_row.hpp"

#include <algorithm>

#include "outboxd/store/store_error.hpp"

namespace outboxd::store {

std::string_view to_string(Status status) noexcept {
    switch (status) {
        case Status::pending:
            return "pending";
        case Status::claimed:
            return "claimed";
        case Status::done:
            return "done";
        case Status::failed:
            return "failed";
        case Status::cancelled:
            return "cancelled";
    }
    return "pending";
}

Status parse_status(std::string_view token) {
    for (const Status status :
         {Status::pending, Status::claimed, Status::done, Status::failed, Status::cancelled}) {
        if (to_string(status) == token) return status;
    }
    throw DecodeError("unknown outbox status '" + std::string{token} + "'");
}

std::string dispatch_key_for(std::string_view workflow_id, std::int64_t ordinal) {
    std::string key{workflow_id};
    key += ':';
    key += std::to_string(ordinal);
    return key;
}

bool ClaimScope::admits(const OutboxRow& row) const {
    if (row.namespace_name != namespace_name || row.task_queue != task_queue) return false;
    // Unpinned rows are servable by any pool; a pinned row only by a pool with its label.
    if (row.node ? row.node != node : !include_unpinned) return false;
    const auto lists = [&row](const std::vector<std::string>& types) {
        return std::find(types.begin(), types.end(), row.activity_type) != types.end();
    };
    return activity_types.empty() ? !lists(excluded_types) : lists(activity_types);
}

}  // namespace outboxd::store
