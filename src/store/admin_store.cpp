#include "outboxd/store/admin_store.hpp"

#include <algorithm>

#include "outbox_sql.hpp"
#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"
#include "row_validation.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

NamespaceSettings decode_namespace(const pqxx::row& r) {
    NamespaceSettings settings;
    settings.name = r[0].as<std::string>();
    if (!r[1].is_null()) settings.max_in_flight = r[1].as<std::int32_t>();
    const auto mode = r[2].as<std::string>();
    if (!parse_placement_mode(mode, settings.placement.mode)) {
        throw DecodeError("namespace '" + settings.name + "': unknown placement mode '" + mode +
                          "'");
    }
    settings.placement.nodes = pg::parse_text_array(r[3]);
    settings.weight = r[4].as<std::int32_t>();
    return settings;
}

}  // namespace

AppendResult AdminStore::append(std::span<const NewRow> rows) {
    if (rows.empty()) return {};
    for (std::size_t i = 0; i < rows.size(); ++i) validate_new_row(rows[i], i);

    pg::ArrayLiteral keys, workflows, ordinals, runs, namespaces, queues, nodes, types, inputs,
        attempts, visible;
    for (const auto& row : rows) {
        keys.add(row.dispatch_key);
        workflows.add(row.workflow_id);
        ordinals.add(row.ordinal);
        runs.add(row.run_id);
        namespaces.add(row.namespace_name);
        queues.add(row.task_queue);
        nodes.add(row.node);
        types.add(row.activity_type);
        inputs.add(row.input_json);
        attempts.add(std::int64_t{row.attempt});
        if (row.visible_after) {
            visible.add(pg::to_micros(*row.visible_after));
        } else {
            visible.add_null();
        }
    }
    const auto result = session_.pg().transact(sql::kAppend, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kAppend.name}, keys.str(), workflows.str(),
                                ordinals.str(), runs.str(), namespaces.str(), queues.str(),
                                nodes.str(), types.str(), inputs.str(), attempts.str(),
                                visible.str());
    });
    const auto staged = static_cast<std::size_t>(result.size());
    return {staged, rows.size() - staged};
}

std::optional<OutboxRow> AdminStore::find(std::string_view dispatch_key) {
    return session_.pg().transact(sql::kFind, [&](pqxx::work& tx) -> std::optional<OutboxRow> {
        const auto result =
            tx.exec_prepared(std::string{sql::kFind.name}, text_param(dispatch_key));
        if (result.empty()) return std::nullopt;
        return decode_row(result[0]);
    });
}

bool AdminStore::pause_workflow(std::string_view workflow_id) {
    if (workflow_id.empty()) throw ValidationError("workflow_id must not be empty");
    return session_.pg().transact(sql::kPauseWorkflow, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kPauseWorkflow.name}, text_param(workflow_id))
                    .empty();
    });
}

bool AdminStore::resume_workflow(std::string_view workflow_id) {
    return session_.pg().transact(sql::kResumeWorkflow, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kResumeWorkflow.name}, text_param(workflow_id))
                    .empty();
    });
}

CancelledRows AdminStore::cancel_workflow(std::string_view workflow_id) {
    if (workflow_id.empty()) throw ValidationError("workflow_id must not be empty");
    return decode_cancelled(session_.pg().transact(sql::kCancelWorkflow, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kCancelWorkflow.name}, text_param(workflow_id));
    }));
}

std::vector<DeadLetter> AdminStore::list_dead_letters(
    std::optional<std::string_view> namespace_name, std::int32_t limit) {
    check_limit(limit);
    std::optional<std::string> ns;
    if (namespace_name) ns.emplace(text_param(*namespace_name));
    const auto result = session_.pg().transact(sql::kListDeadLetters, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kListDeadLetters.name}, ns, limit);
    });
    std::vector<DeadLetter> letters;
    letters.reserve(result.size());
    for (const auto& r : result) {
        letters.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                           r[3].as<std::string>(), r[4].as<std::string>(), r[5].as<std::int32_t>(),
                           pg::optional_text(r[6]), pg::optional_instant(r[7])});
    }
    return letters;
}

bool AdminStore::requeue_dead_letter(std::string_view dispatch_key) {
    return session_.pg().transact(sql::kRequeueDeadLetter, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kRequeueDeadLetter.name},
                                 text_param(dispatch_key))
                    .empty();
    });
}

void AdminStore::put_namespace(const NamespaceSettings& settings) {
    if (settings.name.empty()) throw ValidationError("namespace must not be empty");
    if (settings.max_in_flight && *settings.max_in_flight <= 0) {
        throw ValidationError("max_in_flight must be > 0, got " +
                              std::to_string(*settings.max_in_flight));
    }
    const auto mode = to_string(settings.placement.mode);
    if (settings.placement.mode != PlacementMode::unplaced && settings.placement.nodes.empty()) {
        throw ValidationError("placement mode '" + std::string{mode} + "' needs at least one node");
    }
    for (const auto& node : settings.placement.nodes) {
        if (node.empty()) throw ValidationError("placement nodes must not be empty strings");
    }
    if (settings.weight < kMinWeight || settings.weight > kMaxWeight) {
        throw ValidationError("weight must be between " + std::to_string(kMinWeight) + " and " +
                              std::to_string(kMaxWeight) + ", got " +
                              std::to_string(settings.weight));
    }
    session_.pg().transact(sql::kPutNamespace, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{sql::kPutNamespace.name}, text_param(settings.name),
                         settings.max_in_flight, std::string{mode},
                         pg::text_array(settings.placement.nodes), settings.weight);
    });
}

std::optional<NamespaceSettings> AdminStore::get_namespace(std::string_view name) {
    return session_.pg().transact(
        sql::kGetNamespace, [&](pqxx::work& tx) -> std::optional<NamespaceSettings> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetNamespace.name}, text_param(name));
            if (result.empty()) return std::nullopt;
            return decode_namespace(result[0]);
        });
}

std::vector<NamespaceSettings> AdminStore::list_namespaces() {
    return session_.pg().transact(sql::kListNamespaces, [&](pqxx::work& tx) {
        std::vector<NamespaceSettings> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListNamespaces.name})) {
            out.push_back(decode_namespace(r));
        }
        return out;
    });
}

}  // namespace outboxd::store
