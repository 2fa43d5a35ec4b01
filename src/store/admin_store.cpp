#include "outboxd/store/admin_store.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "admin_sql.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"
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
    auto& controls = settings.controls;
    const auto ordering = r[5].as<std::string>();
    const auto on_dead_letter = r[6].as<std::string>();
    if (!parse_ordering(ordering, controls.ordering) ||
        !parse_on_dead_letter(on_dead_letter, controls.on_dead_letter)) {
        throw DecodeError("namespace '" + settings.name + "': unknown ordering '" + ordering +
                          "' or on_dead_letter '" + on_dead_letter + "'");
    }
    if (!r[7].is_null()) {
        controls.rate_limit =
            RateLimit{r[7].as<double>(), r[8].is_null() ? 1 : r[8].as<std::int32_t>()};
    }
    auto activities = decode_activities(r[9].as<std::string>());
    if (!activities) {
        throw DecodeError("namespace '" + settings.name + "': activities is not a JSON object");
    }
    controls.activities = std::move(*activities);
    settings.keep_results = r[10].as<bool>();
    return settings;
}

}  // namespace

AppendResult AdminStore::append(std::span<const NewRow> rows) {
    if (rows.empty()) return {};
    for (std::size_t i = 0; i < rows.size(); ++i) validate_new_row(rows[i], i);

    pg::ArrayLiteral keys, workflows, ordinals, runs, namespaces, queues, nodes, types, inputs,
        attempts, visible, priorities, traces;
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
        priorities.add(std::int64_t{row.priority});
        traces.add(row.traceparent);
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
                                visible.str(), priorities.str(), traces.str());
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

namespace {

// The rows `statement` reads for a workflow ($1) and a limit ($2).
std::vector<OutboxRow> read_workflow_rows(PgSession& pg, const Statement& statement,
                                          std::string_view workflow_id, std::int32_t limit) {
    return pg.transact(statement, [&](pqxx::work& tx) {
        std::vector<OutboxRow> rows;
        for (const auto& r :
             tx.exec_prepared(std::string{statement.name}, text_param(workflow_id), limit)) {
            rows.push_back(decode_row(r));
        }
        return rows;
    });
}

}  // namespace

std::vector<OutboxRow> AdminStore::workflow_rows(std::string_view workflow_id, std::int32_t limit) {
    check_limit(limit);
    return read_workflow_rows(session_.pg(), sql::kWorkflowRows, workflow_id, limit);
}

std::vector<OutboxRow> AdminStore::all_workflow_rows(std::string_view workflow_id,
                                                     std::int32_t limit) {
    check_limit(limit);
    return read_workflow_rows(session_.pg(), sql::kAllWorkflowRows, workflow_id, limit);
}

std::vector<std::string> AdminStore::workflow_namespaces(std::string_view workflow_id) {
    return session_.pg().transact(sql::kWorkflowNamespaces, [&](pqxx::work& tx) {
        std::vector<std::string> names;
        for (const auto& r : tx.exec_prepared(std::string{sql::kWorkflowNamespaces.name},
                                              text_param(workflow_id))) {
            names.push_back(r[0].as<std::string>());
        }
        return names;
    });
}

WorkflowFlags AdminStore::workflow_flags(std::string_view workflow_id) {
    return session_.pg().transact(sql::kWorkflowFlags, [&](pqxx::work& tx) {
        const auto r =
            tx.exec_prepared1(std::string{sql::kWorkflowFlags.name}, text_param(workflow_id));
        return WorkflowFlags{r[0].as<bool>(), r[1].as<bool>()};
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

bool AdminStore::uncancel_workflow(std::string_view workflow_id) {
    return session_.pg().transact(sql::kUncancelWorkflow, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kUncancelWorkflow.name}, text_param(workflow_id))
                    .empty();
    });
}

CancelledRows AdminStore::cancel_workflow(std::string_view workflow_id) {
    if (workflow_id.empty()) throw ValidationError("workflow_id must not be empty");
    return decode_cancelled(session_.pg().transact(sql::kCancelWorkflow, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kCancelWorkflow.name}, text_param(workflow_id));
    }));
}

namespace {

// The filter as the four parameters the statements take ($1..$4), checked.
struct FilterParams {
    std::optional<std::string> ns, type, error;
    std::optional<std::int64_t> older_than_s;
};

FilterParams filter_params(const DeadLetterFilter& filter) {
    FilterParams out;
    // One namespace, or those a credential may reach: one array either way.
    if (filter.namespace_name) {
        const bool reachable =
            !filter.within_namespaces ||
            std::find(filter.within_namespaces->begin(), filter.within_namespaces->end(),
                      *filter.namespace_name) != filter.within_namespaces->end();
        out.ns = pg::text_array(reachable ? std::vector<std::string>{*filter.namespace_name}
                                          : std::vector<std::string>{});
    } else if (filter.within_namespaces) {
        out.ns = pg::text_array(*filter.within_namespaces);
    }
    if (filter.activity_type) out.type = text_param(*filter.activity_type);
    if (filter.error_contains) out.error = text_param(*filter.error_contains);
    if (filter.older_than_s) {
        if (*filter.older_than_s < 0) throw ValidationError("older_than_s must be >= 0");
        out.older_than_s = filter.older_than_s;
    }
    return out;
}

void check_bulk_limit(std::int32_t limit) {
    if (limit < 1 || limit > kMaxBulkRows) {
        throw ValidationError("limit must be between 1 and " + std::to_string(kMaxBulkRows) +
                              ", got " + std::to_string(limit));
    }
}

}  // namespace

std::vector<DeadLetter> AdminStore::list_dead_letters(const DeadLetterFilter& filter,
                                                      std::int32_t limit,
                                                      std::optional<DeadLetterCursor> after) {
    check_limit(limit);
    const auto p = filter_params(filter);
    std::optional<std::int64_t> after_us;
    std::optional<std::int64_t> after_id;
    if (after) {
        after_us = pg::to_micros(after->failed_at);
        after_id = after->id;
    }
    const auto result = session_.pg().transact(sql::kListDeadLetters, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kListDeadLetters.name}, p.ns, p.type, p.error,
                                p.older_than_s, limit, after_us, after_id);
    });
    std::vector<DeadLetter> letters;
    letters.reserve(result.size());
    for (const auto& r : result) {
        letters.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                           r[3].as<std::string>(), r[4].as<std::string>(), r[5].as<std::int32_t>(),
                           pg::optional_text(r[6]), pg::optional_instant(r[7]),
                           r[8].as<std::int64_t>()});
    }
    return letters;
}

namespace {

// One of the bulk dead-letter statements ($1..$4 the filter, $5 the limit): its count.
std::int64_t bulk_dead_letters(PgSession& session, const Statement& statement,
                               const DeadLetterFilter& filter, std::int32_t limit) {
    check_bulk_limit(limit);
    const auto p = filter_params(filter);
    return session.transact(statement, [&](pqxx::work& tx) {
        return tx
            .exec_prepared(std::string{statement.name}, p.ns, p.type, p.error, p.older_than_s,
                           limit)[0][0]
            .as<std::int64_t>();
    });
}

}  // namespace

std::int64_t AdminStore::requeue_dead_letters(const DeadLetterFilter& filter, std::int32_t limit) {
    return bulk_dead_letters(session_.pg(), sql::kRequeueDeadLetters, filter, limit);
}

std::int64_t AdminStore::purge_dead_letters(const DeadLetterFilter& filter, std::int32_t limit) {
    return bulk_dead_letters(session_.pg(), sql::kPurgeDeadLetters, filter, limit);
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
    if (auto why = rate_problem(settings.controls.rate_limit, "rate_limit")) {
        throw ValidationError(*why);
    }
    if (settings.controls.activities.size() > kMaxActivityPolicies) {
        throw ValidationError("at most " + std::to_string(kMaxActivityPolicies) +
                              " activity types may be configured");
    }
    for (const auto& [type, policy] : settings.controls.activities) {
        if (auto why = util::identifier_problem(type, util::kMaxIdentifierBytes)) {
            throw ValidationError("activity type " + *why);
        }
        if (auto why = policy_problem(type, policy)) throw ValidationError(*why);
    }
    session_.pg().transact(sql::kPutNamespace, [&](pqxx::work& tx) {
        const auto& controls = settings.controls;
        const std::optional<double> rate =
            controls.rate_limit ? std::optional<double>{controls.rate_limit->per_second}
                                : std::nullopt;
        const std::optional<std::int32_t> burst =
            controls.rate_limit ? std::optional<std::int32_t>{controls.rate_limit->burst}
                                : std::nullopt;
        tx.exec_prepared(std::string{sql::kPutNamespace.name}, text_param(settings.name),
                         settings.max_in_flight, std::string{mode},
                         pg::text_array(settings.placement.nodes), settings.weight,
                         std::string{to_string(controls.ordering)},
                         std::string{to_string(controls.on_dead_letter)}, rate, burst,
                         encode_activities(controls.activities), settings.keep_results);
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
    return session_.pg().autocommit(sql::kListNamespaces, [&](pqxx::nontransaction& tx) {
        std::vector<NamespaceSettings> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListNamespaces.name})) {
            out.push_back(decode_namespace(r));
        }
        return out;
    });
}

std::vector<NamespaceCounts> AdminStore::namespace_counts() {
    return session_.pg().transact(sql::kNamespaceCounts, [&](pqxx::work& tx) {
        std::vector<NamespaceCounts> out;
        for (const auto& r :
             tx.exec_prepared(std::string{sql::kNamespaceCounts.name}, kMaxNamespaceSummaries)) {
            out.push_back({r[0].as<std::string>(), r[1].as<std::int64_t>(), r[2].as<std::int64_t>(),
                           r[3].as<std::int64_t>(), r[4].as<std::int64_t>(),
                           r[5].as<std::int64_t>(), r[6].as<std::int64_t>()});
        }
        return out;
    });
}

}  // namespace outboxd::store
