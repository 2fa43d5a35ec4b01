#pragma once

// The API's answers as JSON (README, "HTTP API"): what a resource looks like on the wire,
// apart from how it is found. Pure: no I/O. Stored JSON (inputs, results, progress) is
// spliced as stored, never parsed: a row inserted by plain SQL may nest deeper than anything
// outboxd would build, and re-serializing recurses once per level.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api_types.hpp"
#include "outboxd/auth/grant.hpp"
#include "outboxd/sinks/targets/targets.hpp"
#include "outboxd/store/admin_store.hpp"
#include "outboxd/store/schedule_store.hpp"
#include "outboxd/store/target.hpp"

namespace outboxd::http {

[[nodiscard]] ApiResponse json_response(const nlohmann::json& body, int status = 200);
[[nodiscard]] ApiResponse text_response(std::string json_text, int status = 200);

// `object` (the text of a JSON object) tagged with the database it lives in:
// {"database":"<name>",…}.
[[nodiscard]] std::string with_database(const std::string& object, const std::string& database);

// The items of a listing over databases: each database's items (a JSON array), each tagged
// with its database, one database after the other.
[[nodiscard]] nlohmann::json tagged_items(
    const std::vector<std::pair<std::string, nlohmann::json>>& parts);
// The same of items kept as JSON texts (stored JSON spliced in): a JSON array's text.
[[nodiscard]] std::string tagged_items(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& parts);

// GET /v1/outbox/{key}: one row; without `payloads` (a reader without read_payloads), its
// input, result and progress are null and "payloads_hidden" is true.
[[nodiscard]] std::string row_json(const store::OutboxRow& row, bool payloads = true);
// GET /v1/workflows/{id}: the rows its order depends on, whether it is paused or
// cancelled, and the dead letter that holds it back, if one does. `payloads` says of a
// row's namespace whether its payloads are shown (none: all are).
[[nodiscard]] std::string workflow_json(
    const std::string& workflow, const std::vector<store::OutboxRow>& rows,
    const store::WorkflowFlags& flags, const std::optional<std::string>& blocked_by,
    const std::function<bool(const std::string&)>& payloads = nullptr);
// A dead letter of GET /v1/dead-letters.
[[nodiscard]] nlohmann::json dead_letter_json(const store::DeadLetter& letter);
// A namespace's settings (none: never set, the defaults).
[[nodiscard]] nlohmann::json namespace_json(const std::string& name,
                                            const std::optional<store::NamespaceSettings>& s,
                                            std::int64_t default_quota);
// An HTTP target, with this node's view of it (`states`, taken on the loop).
[[nodiscard]] nlohmann::json target_json(const store::TargetRecord& record,
                                         const sinks::targets::TargetStates& states,
                                         const std::string& node_id);
// A schedule, with its next fire times.
[[nodiscard]] std::string schedule_json(const store::ScheduleRecord& record, bool payloads = true);
// GET /v1/whoami: a grant's credential id, scopes (namespace and roles), nodes and expiry.
[[nodiscard]] nlohmann::json grant_json(const auth::Grant& grant);

}  // namespace outboxd::http
