// The HTTP API's request body parsers: POST /v1/outbox (staging rows) and
// PUT /v1/namespaces/{ns}, on one body as a client could send it.
//
// Oracles beyond "no crash, no sanitizer report":
//  - a refusal carries one of the documented codes, and names its row exactly when it is
//    invalid_row;
//  - the store's own row validation either accepts a parsed row or refuses it with a
//    ValidationError, nothing else;
//  - a row both accept can be delivered: its task frame (as the dispatcher builds it, with
//    the key the database derives when none is given) parses back to the same task on the
//    worker's side, so no accepted row is one that no worker can ever receive;
//  - an accepted visible_after survives formatting and parsing again (the API shows it so);
//  - accepted namespace settings hold what the parser promises.

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <variant>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "http/api_router.hpp"
#include "http/row_parser.hpp"
#include "http/time_format.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/worker/protocol.hpp"
#include "store/row_validation.hpp"

namespace {

namespace http = outboxd::http;
namespace protocol = outboxd::worker::protocol;
namespace store = outboxd::store;
using outboxd::fuzz::broken;
using outboxd::fuzz::require;

// The longest task id the dispatcher writes: "<row id>.<claim token>", both int64.
constexpr std::string_view kLongestTaskId = "9223372036854775807.9223372036854775807";
constexpr std::int64_t kTaskTimeoutMs = 30000;

protocol::Task task_for(const store::NewRow& row) {
    protocol::Task task;
    task.task_id = std::string{kLongestTaskId};
    // The database fills a missing key in with workflow_id:ordinal (migration 0001).
    task.dispatch_key =
        row.dispatch_key.value_or(store::dispatch_key_for(row.workflow_id, row.ordinal));
    task.workflow_id = row.workflow_id;
    task.ordinal = row.ordinal;
    task.run_id = row.run_id;
    task.namespace_name = row.namespace_name;
    task.task_queue = row.task_queue;
    task.node = row.node;
    task.activity_type = row.activity_type;
    task.input_json = row.input_json;
    task.attempt = std::int64_t{row.attempt} + 1;
    task.timeout_ms = kTaskTimeoutMs;
    return task;
}

auto fields(const protocol::Task& m) {
    return std::tie(m.task_id, m.dispatch_key, m.workflow_id, m.ordinal, m.run_id, m.namespace_name,
                    m.task_queue, m.node, m.activity_type, m.input_json, m.attempt, m.timeout_ms);
}

void check_deliverable(const store::NewRow& row, std::size_t index) {
    const auto task = task_for(row);
    const auto frame = protocol::encode(task);
    const auto parsed = protocol::parse_node_frame(frame);
    if (const auto* error = std::get_if<protocol::ProtocolError>(&parsed)) {
        broken("a row the API and the store accept can be delivered in a task frame",
               "row " + std::to_string(index) +
                   ": worker refuses its task frame: " + error->message + " | frame: " + frame);
    }
    const auto& messages = std::get<std::vector<protocol::NodeMessage>>(parsed);
    const auto* again = messages.size() == 1 ? std::get_if<protocol::Task>(&messages[0]) : nullptr;
    require(again != nullptr, "a task frame parses back to one task", frame);
    // The worker sees the input as the parser re-serialises it; the rest byte for byte.
    auto expected = task;
    expected.input_json = nlohmann::json::parse(row.input_json).dump();
    require(fields(*again) == fields(expected), "a task frame parses back to the same task", frame);
}

void check_stage(const std::string& body) {
    const auto parsed = http::parse_stage_request(body, http::kMaxRowsPerRequest);
    if (const auto* error = std::get_if<http::RowError>(&parsed)) {
        const bool known = error->code == "invalid_json" || error->code == "invalid_request" ||
                           error->code == "invalid_row";
        require(known, "a refused staging body has a documented code", error->code);
        require(error->row.has_value() == (error->code == "invalid_row"),
                "a staging refusal names its row exactly when it is invalid_row", error->message);
        return;
    }
    const auto& rows = std::get<std::vector<store::NewRow>>(parsed);
    require(!rows.empty() && rows.size() <= http::kMaxRowsPerRequest,
            "an accepted staging body holds 1 to kMaxRowsPerRequest rows");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        try {
            store::validate_new_row(row, i);
        } catch (const store::ValidationError& refused) {
            require(refused.row_index() == i, "the store's refusal names the row it refused",
                    refused.what());
            continue;
        }
        check_deliverable(row, i);
        if (row.visible_after) {
            const auto shown = http::format_rfc3339(*row.visible_after);
            const auto again = http::parse_rfc3339(shown);
            require(again == row.visible_after,
                    "an accepted visible_after reads back the same from its RFC 3339 form", shown);
        }
    }
}

void check_namespace(const std::string& body) {
    const auto parsed = http::parse_namespace_request("tenant-a", body);
    if (const auto* error = std::get_if<http::RowError>(&parsed)) {
        require(error->code == "invalid_json" || error->code == "invalid_request",
                "a refused namespace body has a documented code", error->code);
        require(!error->row, "a namespace refusal names no row");
        return;
    }
    const auto& settings = std::get<store::NamespaceSettings>(parsed);
    require(settings.name == "tenant-a", "namespace settings keep the name from the URL");
    require(!settings.max_in_flight || *settings.max_in_flight >= 1,
            "an accepted quota is a positive integer");
    const auto mode = std::string{store::to_string(settings.placement.mode)};
    store::PlacementMode parsed_back{};
    require(
        store::parse_placement_mode(mode, parsed_back) && parsed_back == settings.placement.mode,
        "an accepted placement mode is unplaced, prefer or pinned", mode);
    require(settings.placement.mode == store::PlacementMode::unplaced ||
                !settings.placement.nodes.empty(),
            "prefer and pinned placements name at least one node");
    for (const auto& node : settings.placement.nodes) {
        require(!node.empty(), "placement nodes are non-empty");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string body{reinterpret_cast<const char*>(data), size};
    check_stage(body);
    check_namespace(body);
    return 0;
}
