#pragma once

// HTTP push targets in PostgreSQL (table http_targets): what the API sets and lists, what
// every node reads each namespace cache TTL, and what delivering nodes report back. See
// OutboxSession for threads, errors and time. Rows are returned as stored: whoever uses
// one checks it first (http_push::check_target), since plain SQL may have written it.

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "outboxd/store/http_target.hpp"
#include "outboxd/store/outbox_session.hpp"

namespace outboxd::store {

class TargetStore {
public:
    explicit TargetStore(OutboxSession& session) : session_(session) {}

    // Creates or replaces a target (clearing its recorded error). The table's CHECKs refuse
    // a name, bound or header set out of shape with a ValidationError.
    void put(const HttpTargetSettings& target);
    std::optional<HttpTargetRecord> get(std::string_view name);
    std::vector<HttpTargetRecord> list();
    // False when there was no such target.
    bool remove(std::string_view name);
    // Records what a node saw of its targets (targets since deleted are skipped).
    void report(std::span<const HttpTargetReport> reports);

private:
    OutboxSession& session_;
};

}  // namespace outboxd::store
