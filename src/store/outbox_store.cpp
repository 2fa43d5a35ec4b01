#include "outboxd/store/outbox_store.hpp"

#include <algorithm>
#include <set>

#include "outbox_sql.hpp"
#include "outboxd/store/store_error.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_validation.hpp"

namespace outboxd::store {
namespace {

std::int64_t millis(std::chrono::milliseconds duration) { return duration.count(); }

// Columns 0..9, the same in OUTBOXD_ROW_COLUMNS and OUTBOXD_CLAIMED_COLUMNS: what a task is.
void decode_task_fields(const pqxx::row& r, OutboxRow& row) {
    row.id = r[0].as<std::int64_t>();
    row.dispatch_key = r[1].as<std::string>();
    row.workflow_id = r[2].as<std::string>();
    row.ordinal = r[3].as<std::int64_t>();
    row.run_id = pg::optional_text(r[4]);
    row.namespace_name = r[5].as<std::string>();
    row.task_queue = r[6].as<std::string>();
    row.node = pg::optional_text(r[7]);
    row.activity_type = r[8].as<std::string>();
    row.input_json = r[9].as<std::string>();
}

OutboxRow decode_row(const pqxx::row& r) {
    OutboxRow row;
    decode_task_fields(r, row);
    row.status = parse_status(r[10].c_str());
    row.attempt = r[11].as<std::int32_t>();
    row.visible_after = pg::from_micros(r[12].as<std::int64_t>());
    row.claimed_at = pg::optional_instant(r[13]);
    row.claimed_by = pg::optional_text(r[14]);
    row.claim_token = r[15].is_null() ? 0 : r[15].as<std::int64_t>();
    row.last_error = pg::optional_text(r[16]);
    row.created_at = pg::from_micros(r[17].as<std::int64_t>());
    row.finished_at = pg::optional_instant(r[18]);
    row.shard = r[19].as<std::int32_t>();
    return row;
}

void sort_claim_order(std::vector<OutboxRow>& rows) {
    std::sort(rows.begin(), rows.end(), [](const OutboxRow& a, const OutboxRow& b) {
        return std::tie(a.visible_after, a.id) < std::tie(b.visible_after, b.id);
    });
}

// Rows of a claim (OUTBOXD_CLAIMED_COLUMNS), in claim order: UPDATE … RETURNING gives them
// in no particular order.
std::vector<OutboxRow> decode_claimed(const pqxx::result& result, const std::string& claimer) {
    std::vector<OutboxRow> rows;
    rows.reserve(result.size());
    for (const auto& r : result) {
        OutboxRow row;
        decode_task_fields(r, row);
        row.status = Status::claimed;
        row.attempt = r[10].as<std::int32_t>();
        row.visible_after = pg::from_micros(r[11].as<std::int64_t>());
        row.claim_token = r[12].as<std::int64_t>();
        row.shard = r[13].as<std::int32_t>();
        row.claimed_at = pg::from_micros(r[14].as<std::int64_t>());
        row.claimed_by = claimer;
        rows.push_back(std::move(row));
    }
    sort_claim_order(rows);
    return rows;
}

// Full rows (OUTBOXD_ROW_COLUMNS) in claim order.
std::vector<OutboxRow> decode_rows_in_claim_order(const pqxx::result& result) {
    std::vector<OutboxRow> rows;
    rows.reserve(result.size());
    for (const auto& r : result) rows.push_back(decode_row(r));
    sort_claim_order(rows);
    return rows;
}

std::vector<std::string> decode_texts(const pqxx::result& result) {
    std::vector<std::string> texts;
    texts.reserve(result.size());
    for (const auto& r : result) texts.push_back(r[0].as<std::string>());
    return texts;
}

// A text parameter as libpq will send it: as a C string, which a NUL would cut short (and
// the statement would then look up another value), so refused before it reaches SQL.
std::string text_param(std::string_view value) {
    if (value.find('\0') != std::string_view::npos) {
        throw ValidationError("text parameter contains a NUL byte");
    }
    return std::string{value};
}

void check_limit(std::int32_t limit) {
    if (limit < 0) throw ValidationError("limit must be >= 0, got " + std::to_string(limit));
}

std::string_view outcome_kind(Outcome::Kind kind) {
    switch (kind) {
        case Outcome::Kind::done:
            return "done";
        case Outcome::Kind::retry:
            return "retry";
        case Outcome::Kind::fail:
            return "fail";
        case Outcome::Kind::release:
            return "release";
    }
    return "done";
}

}  // namespace

namespace {

std::vector<std::string> session_setup(OutboxStore::Commits commits,
                                       std::chrono::milliseconds statement_timeout) {
    const auto& base = commits == OutboxStore::Commits::relaxed
                           ? std::span<const std::string_view>{sql::kRelaxedSessionSetup}
                           : std::span<const std::string_view>{sql::kSessionSetup};
    std::vector<std::string> setup(base.begin(), base.end());
    if (statement_timeout.count() > 0) {
        setup.push_back("SET statement_timeout = " + std::to_string(statement_timeout.count()));
    }
    return setup;
}

}  // namespace

OutboxStore::OutboxStore(std::string database_url, Commits commits,
                         std::chrono::milliseconds statement_timeout)
    : session_(std::make_unique<PgSession>(std::move(database_url), sql::kOutboxStatements,
                                           session_setup(commits, statement_timeout))) {}

OutboxStore::~OutboxStore() = default;

AppendResult OutboxStore::append(std::span<const NewRow> rows) {
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
    const auto result = session_->transact(sql::kAppend, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kAppend.name}, keys.str(), workflows.str(),
                                ordinals.str(), runs.str(), namespaces.str(), queues.str(),
                                nodes.str(), types.str(), inputs.str(), attempts.str(),
                                visible.str());
    });
    const auto staged = static_cast<std::size_t>(result.size());
    return {staged, rows.size() - staged};
}

std::vector<OutboxRow> OutboxStore::claim(const Owner& owner, std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    return session_->autocommit(sql::kClaim, [&](pqxx::nontransaction& tx) {
        return decode_claimed(tx.exec_prepared(std::string{sql::kClaim.name}, owner.incarnation,
                                               owner.ranges.to_multirange(), limit),
                              owner.incarnation);
    });
}

std::vector<OutboxRow> OutboxStore::claim_scoped(const Owner& owner, const ClaimScope& scope,
                                                 std::int32_t limit,
                                                 std::optional<ClaimPosition> after) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    const auto& statement = after ? sql::kClaimScopedAfter : sql::kClaimScoped;
    const auto namespace_name = text_param(scope.namespace_name);
    const auto task_queue = text_param(scope.task_queue);
    const auto node = scope.node ? std::optional{text_param(*scope.node)} : std::nullopt;
    const auto types = pg::text_array(scope.activity_types);
    return session_->autocommit(statement, [&](pqxx::nontransaction& tx) {
        const std::string name{statement.name};
        const auto ranges = owner.ranges.to_multirange();
        const auto result =
            after ? tx.exec_prepared(name, owner.incarnation, ranges, namespace_name, task_queue,
                                     node, types, limit, scope.include_unpinned,
                                     pg::to_micros(after->visible_after), after->id)
                  : tx.exec_prepared(name, owner.incarnation, ranges, namespace_name, task_queue,
                                     node, types, limit, scope.include_unpinned);
        return decode_claimed(result, owner.incarnation);
    });
}

namespace {

// The per-route arrays of kClaimRoutes and kRoutesWithDueRows ($3..$7).
struct RouteArrays {
    pg::ArrayLiteral namespaces, queues, nodes, unpinned, types;

    void add(const ClaimScope& scope) {
        namespaces.add(text_param(scope.namespace_name));
        queues.add(text_param(scope.task_queue));
        nodes.add(scope.node);
        unpinned.add(std::string_view{scope.include_unpinned ? "t" : "f"});
        types.add(pg::text_array(scope.activity_types));
    }
};

}  // namespace

std::vector<std::vector<OutboxRow>> OutboxStore::claim_routes(const Owner& owner,
                                                              std::span<const RouteClaim> claims) {
    std::vector<std::vector<OutboxRow>> out(claims.size());
    if (claims.empty() || owner.ranges.empty()) return out;
    RouteArrays routes;
    pg::ArrayLiteral limits, after_us, after_ids;
    for (const auto& claim : claims) {
        check_limit(claim.limit);
        routes.add(claim.scope);
        limits.add(std::int64_t{claim.limit});
        if (claim.after) {
            after_us.add(pg::to_micros(claim.after->visible_after));
            after_ids.add(claim.after->id);
        } else {
            after_us.add_null();
            after_ids.add_null();
        }
    }
    const auto result = session_->autocommit(sql::kClaimRoutes, [&](pqxx::nontransaction& tx) {
        return tx.exec_prepared(std::string{sql::kClaimRoutes.name}, owner.incarnation,
                                owner.ranges.to_multirange(), routes.namespaces.str(),
                                routes.queues.str(), routes.nodes.str(), routes.unpinned.str(),
                                routes.types.str(), limits.str(), after_us.str(), after_ids.str());
    });
    for (const auto& r : result) {
        const auto route = r[15].as<std::int64_t>() - 1;  // ordinals are one-based
        if (route < 0 || static_cast<std::size_t>(route) >= claims.size()) {
            throw DecodeError("outbox_claim_routes: route ordinal " + std::to_string(route + 1) +
                              " out of range");
        }
        OutboxRow row;
        decode_task_fields(r, row);
        row.status = Status::claimed;
        row.attempt = r[10].as<std::int32_t>();
        row.visible_after = pg::from_micros(r[11].as<std::int64_t>());
        row.claim_token = r[12].as<std::int64_t>();
        row.shard = r[13].as<std::int32_t>();
        row.claimed_at = pg::from_micros(r[14].as<std::int64_t>());
        row.claimed_by = owner.incarnation;
        out[static_cast<std::size_t>(route)].push_back(std::move(row));
    }
    for (auto& rows : out) sort_claim_order(rows);
    return out;
}

std::vector<std::size_t> OutboxStore::routes_with_due_rows(const Owner& owner,
                                                           std::span<const ClaimScope> scopes) {
    std::vector<std::size_t> out;
    if (scopes.empty() || owner.ranges.empty()) return out;
    RouteArrays routes;
    for (const auto& scope : scopes) routes.add(scope);
    const auto result =
        session_->autocommit(sql::kRoutesWithDueRows, [&](pqxx::nontransaction& tx) {
            return tx.exec_prepared(std::string{sql::kRoutesWithDueRows.name}, owner.incarnation,
                                    owner.ranges.to_multirange(), routes.namespaces.str(),
                                    routes.queues.str(), routes.nodes.str(), routes.unpinned.str(),
                                    routes.types.str());
        });
    for (const auto& r : result)
        out.push_back(static_cast<std::size_t>(r[0].as<std::int64_t>() - 1));
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<bool> OutboxStore::record_outcomes(std::span<const Outcome> outcomes) {
    if (outcomes.empty()) return {};
    pg::ArrayLiteral ids, tokens, kinds, delays, errors;
    // A batch naming one claim twice applies its first mention: only that one is sent (an
    // UPDATE … FROM applies an arbitrary one of several matches).
    std::set<std::pair<std::int64_t, std::int64_t>> sent;
    for (const auto& outcome : outcomes) {
        if (!sent.emplace(outcome.ref.id, outcome.ref.token).second) continue;
        ids.add(outcome.ref.id);
        tokens.add(outcome.ref.token);
        kinds.add(outcome_kind(outcome.kind));
        delays.add(std::max<std::int64_t>(0, millis(outcome.delay)));
        errors.add(std::string_view{outcome.error});
    }
    const auto result = session_->autocommit(sql::kRecordOutcomes, [&](pqxx::nontransaction& tx) {
        return tx.exec_prepared(std::string{sql::kRecordOutcomes.name}, ids.str(), tokens.str(),
                                kinds.str(), delays.str(), errors.str());
    });
    std::set<std::pair<std::int64_t, std::int64_t>> applied;
    for (const auto& r : result) applied.emplace(r[0].as<std::int64_t>(), r[1].as<std::int64_t>());
    std::vector<bool> out;
    out.reserve(outcomes.size());
    for (const auto& outcome : outcomes) {
        // A batch naming one claim twice applies it once: the first mention wins.
        out.push_back(applied.erase({outcome.ref.id, outcome.ref.token}) > 0);
    }
    return out;
}

bool OutboxStore::complete(ClaimRef ref) {
    const Outcome outcome = Outcome::done(ref);
    return record_outcomes({&outcome, 1}).front();
}

bool OutboxStore::retry(ClaimRef ref, std::chrono::milliseconds delay, std::string_view error) {
    const Outcome outcome = Outcome::retry(ref, delay, std::string{error});
    return record_outcomes({&outcome, 1}).front();
}

bool OutboxStore::fail(ClaimRef ref, std::string_view error) {
    const Outcome outcome = Outcome::fail(ref, std::string{error});
    return record_outcomes({&outcome, 1}).front();
}

std::vector<OutboxRow> OutboxStore::list_stale_claimed(const ShardRanges& ranges,
                                                       std::chrono::milliseconds older_than,
                                                       std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || ranges.empty()) return {};
    return session_->transact(sql::kListStaleClaimed, [&](pqxx::work& tx) {
        const auto result = tx.exec_prepared(std::string{sql::kListStaleClaimed.name},
                                             ranges.to_multirange(), millis(older_than), limit);
        std::vector<OutboxRow> rows;
        for (const auto& r : result) rows.push_back(decode_row(r));
        return rows;
    });
}

std::vector<OutboxRow> OutboxStore::rearm_stale_claimed(const Owner& owner,
                                                        std::chrono::milliseconds older_than,
                                                        std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    return session_->autocommit(sql::kRearmStaleClaimed, [&](pqxx::nontransaction& tx) {
        return decode_rows_in_claim_order(
            tx.exec_prepared(std::string{sql::kRearmStaleClaimed.name}, owner.incarnation,
                             owner.ranges.to_multirange(), millis(older_than), limit));
    });
}

std::vector<OutboxRow> OutboxStore::rearm_orphaned(const Owner& owner,
                                                   std::chrono::milliseconds liveness,
                                                   std::int32_t limit) {
    check_limit(limit);
    if (limit == 0 || owner.ranges.empty()) return {};
    return session_->autocommit(sql::kRearmOrphaned, [&](pqxx::nontransaction& tx) {
        return decode_rows_in_claim_order(
            tx.exec_prepared(std::string{sql::kRearmOrphaned.name}, owner.incarnation,
                             owner.ranges.to_multirange(), millis(liveness), limit));
    });
}

std::int64_t OutboxStore::release_claims_after(const Owner& owner, std::int64_t token) {
    return session_->autocommit(sql::kReleaseClaimsAfter, [&](pqxx::nontransaction& tx) {
        return static_cast<std::int64_t>(
            tx.exec_prepared(std::string{sql::kReleaseClaimsAfter.name}, owner.incarnation, token)
                .affected_rows());
    });
}

std::vector<std::string> OutboxStore::list_unsettled_workflow_ids(const ShardRanges& ranges) {
    if (ranges.empty()) return {};
    return session_->transact(sql::kListUnsettledWorkflows, [&](pqxx::work& tx) {
        return decode_texts(tx.exec_prepared(std::string{sql::kListUnsettledWorkflows.name},
                                             ranges.to_multirange()));
    });
}

std::vector<std::string> OutboxStore::cancel_workflow(std::string_view workflow_id) {
    return cancel_workflow_counted(workflow_id).keys;
}

namespace {

OutboxStore::Cancelled decode_cancelled(const pqxx::result& result) {
    OutboxStore::Cancelled cancelled;
    for (const auto& r : result) {
        cancelled.keys.push_back(r[0].as<std::string>());
        ++cancelled.by_namespace[r[1].as<std::string>()];
    }
    std::sort(cancelled.keys.begin(), cancelled.keys.end());
    return cancelled;
}

}  // namespace

OutboxStore::Cancelled OutboxStore::cancel_workflow_counted(std::string_view workflow_id) {
    if (workflow_id.empty()) throw ValidationError("workflow_id must not be empty");
    return decode_cancelled(session_->transact(sql::kCancelWorkflow, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kCancelWorkflow.name}, text_param(workflow_id));
    }));
}

OutboxStore::Cancelled OutboxStore::settle_cancelled(const Owner& owner) {
    if (owner.ranges.empty()) return {};
    return decode_cancelled(session_->transact(sql::kSettleCancelled, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kSettleCancelled.name}, owner.incarnation,
                                owner.ranges.to_multirange());
    }));
}

std::int64_t OutboxStore::count_inflight(std::string_view namespace_name,
                                         const ShardRanges& ranges) {
    if (ranges.empty()) return 0;
    return session_->transact(sql::kCountInflight, [&](pqxx::work& tx) {
        return tx
            .exec_prepared1(std::string{sql::kCountInflight.name}, text_param(namespace_name),
                            ranges.to_multirange())[0]
            .as<std::int64_t>();
    });
}

std::int64_t OutboxStore::count_claimed(std::string_view namespace_name,
                                        const ShardRanges& ranges) {
    if (ranges.empty()) return 0;
    return session_->transact(sql::kCountClaimed, [&](pqxx::work& tx) {
        return tx
            .exec_prepared1(std::string{sql::kCountClaimed.name}, text_param(namespace_name),
                            ranges.to_multirange())[0]
            .as<std::int64_t>();
    });
}

std::map<std::string, std::int64_t> OutboxStore::count_claimed_by_namespace(
    std::span<const std::string> namespaces, const ShardRanges& ranges) {
    std::map<std::string, std::int64_t> counts;
    for (const auto& ns : namespaces) counts.emplace(ns, 0);
    if (namespaces.empty() || ranges.empty()) return counts;
    const auto result =
        session_->autocommit(sql::kCountClaimedByNamespace, [&](pqxx::nontransaction& tx) {
            return tx.exec_prepared(std::string{sql::kCountClaimedByNamespace.name},
                                    pg::text_array(namespaces), ranges.to_multirange());
        });
    for (const auto& r : result) counts[r[0].as<std::string>()] = r[1].as<std::int64_t>();
    return counts;
}

std::map<std::string, OutboxStore::NamespaceCounts> OutboxStore::count_live_by_namespace(
    const ShardRanges& ranges) {
    std::map<std::string, NamespaceCounts> counts;
    if (ranges.empty()) return counts;
    const auto result = session_->transact(sql::kCountLiveByNamespace, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kCountLiveByNamespace.name},
                                ranges.to_multirange());
    });
    for (const auto& r : result) {
        counts[r[0].as<std::string>()] = {r[1].as<std::int64_t>(), r[2].as<std::int64_t>()};
    }
    return counts;
}

std::vector<ClaimScope> OutboxStore::pending_routes(const ShardRanges& ranges) {
    if (ranges.empty()) return {};
    const auto result = session_->transact(sql::kPendingRoutes, [&](pqxx::work& tx) {
        return tx.exec_prepared(std::string{sql::kPendingRoutes.name}, ranges.to_multirange());
    });
    std::vector<ClaimScope> routes;
    routes.reserve(result.size());
    for (const auto& r : result) {
        routes.push_back(
            {r[0].as<std::string>(), r[1].as<std::string>(), pg::optional_text(r[2]), {}});
    }
    return routes;
}

std::optional<OutboxRow> OutboxStore::find(std::string_view dispatch_key) {
    return session_->transact(sql::kFind, [&](pqxx::work& tx) -> std::optional<OutboxRow> {
        const auto result =
            tx.exec_prepared(std::string{sql::kFind.name}, text_param(dispatch_key));
        if (result.empty()) return std::nullopt;
        return decode_row(result[0]);
    });
}

bool OutboxStore::pause_workflow(std::string_view workflow_id) {
    if (workflow_id.empty()) throw ValidationError("workflow_id must not be empty");
    return session_->transact(sql::kPauseWorkflow, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kPauseWorkflow.name}, text_param(workflow_id))
                    .empty();
    });
}

bool OutboxStore::resume_workflow(std::string_view workflow_id) {
    return session_->transact(sql::kResumeWorkflow, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kResumeWorkflow.name}, text_param(workflow_id))
                    .empty();
    });
}

bool OutboxStore::is_paused(std::string_view workflow_id) {
    return session_->transact(sql::kIsPaused, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kIsPaused.name}, text_param(workflow_id)).empty();
    });
}

std::vector<DeadLetter> OutboxStore::list_dead_letters(
    std::optional<std::string_view> namespace_name, std::int32_t limit) {
    check_limit(limit);
    std::optional<std::string> ns;
    if (namespace_name) ns.emplace(text_param(*namespace_name));
    const auto result = session_->transact(sql::kListDeadLetters, [&](pqxx::work& tx) {
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

bool OutboxStore::requeue_dead_letter(std::string_view dispatch_key) {
    return session_->transact(sql::kRequeueDeadLetter, [&](pqxx::work& tx) {
        return !tx.exec_prepared(std::string{sql::kRequeueDeadLetter.name},
                                 text_param(dispatch_key))
                    .empty();
    });
}

namespace {

NamespaceSettings decode_namespace(const pqxx::row& r) {
    NamespaceSettings settings;
    settings.name = r[0].as<std::string>();
    if (!r[1].is_null()) settings.max_in_flight = r[1].as<std::int32_t>();
    settings.placement_mode = r[2].as<std::string>();
    settings.placement_nodes = pg::parse_text_array(r[3]);
    settings.weight = r[4].as<std::int32_t>();
    return settings;
}

}  // namespace

void OutboxStore::put_namespace(const NamespaceSettings& settings) {
    if (settings.name.empty()) throw ValidationError("namespace must not be empty");
    if (settings.max_in_flight && *settings.max_in_flight <= 0) {
        throw ValidationError("max_in_flight must be > 0, got " +
                              std::to_string(*settings.max_in_flight));
    }
    const auto& mode = settings.placement_mode;
    if (mode != "unplaced" && mode != "prefer" && mode != "pinned") {
        throw ValidationError("placement mode must be unplaced, prefer or pinned, got '" + mode +
                              "'");
    }
    if (mode != "unplaced" && settings.placement_nodes.empty()) {
        throw ValidationError("placement mode '" + mode + "' needs at least one node");
    }
    for (const auto& node : settings.placement_nodes) {
        if (node.empty()) throw ValidationError("placement nodes must not be empty strings");
    }
    if (settings.weight < kMinWeight || settings.weight > kMaxWeight) {
        throw ValidationError("weight must be between " + std::to_string(kMinWeight) + " and " +
                              std::to_string(kMaxWeight) + ", got " +
                              std::to_string(settings.weight));
    }
    session_->transact(sql::kPutNamespace, [&](pqxx::work& tx) {
        tx.exec_prepared(std::string{sql::kPutNamespace.name}, text_param(settings.name),
                         settings.max_in_flight, mode, pg::text_array(settings.placement_nodes),
                         settings.weight);
    });
}

std::optional<NamespaceSettings> OutboxStore::get_namespace(std::string_view name) {
    return session_->transact(
        sql::kGetNamespace, [&](pqxx::work& tx) -> std::optional<NamespaceSettings> {
            const auto result =
                tx.exec_prepared(std::string{sql::kGetNamespace.name}, text_param(name));
            if (result.empty()) return std::nullopt;
            return decode_namespace(result[0]);
        });
}

std::vector<NamespaceSettings> OutboxStore::list_namespaces() {
    return session_->transact(sql::kListNamespaces, [&](pqxx::work& tx) {
        std::vector<NamespaceSettings> out;
        for (const auto& r : tx.exec_prepared(std::string{sql::kListNamespaces.name})) {
            out.push_back(decode_namespace(r));
        }
        return out;
    });
}

std::int64_t OutboxStore::delete_finished(std::chrono::milliseconds older_than,
                                          std::int32_t limit) {
    check_limit(limit);
    if (limit == 0) return 0;
    return session_->transact(sql::kDeleteFinished, [&](pqxx::work& tx) {
        return static_cast<std::int64_t>(
            tx.exec_prepared(std::string{sql::kDeleteFinished.name}, millis(older_than), limit)
                .affected_rows());
    });
}

}  // namespace outboxd::store
