#include "outboxd/store/outcome_store.hpp"

#include <algorithm>
#include <set>

#include "outcome_sql.hpp"
#include "pg_codec.hpp"
#include "pg_session.hpp"
#include "row_codec.hpp"

namespace outboxd::store {

using namespace codec;

namespace {

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

std::vector<bool> OutcomeStore::record_outcomes(std::span<const Outcome> outcomes) {
    if (outcomes.empty()) return {};
    pg::ArrayLiteral ids, tokens, kinds, delays, errors, workflows;
    // One JSON array of the results, element for element (results are JSON text already):
    // empty while no outcome of the batch has one.
    std::string results = "[";
    bool any_result = false;
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
        const bool kept = outcome.kind == Outcome::Kind::done && outcome.result_json;
        if (results.size() > 1) results += ',';
        results += kept ? *outcome.result_json : std::string{"null"};
        any_result = any_result || kept;
        if (!outcome.let_go_workflow.empty()) workflows.add(text_param(outcome.let_go_workflow));
    }
    results = any_result ? results + "]" : "[]";
    const bool letting_go = !workflows.empty();
    const auto& statement = letting_go ? sql::kRecordOutcomesLettingGo : sql::kRecordOutcomes;
    const auto result = session_.pg().autocommit(statement, [&](pqxx::nontransaction& tx) {
        const std::string name{statement.name};
        return letting_go ? tx.exec_prepared(name, ids.str(), tokens.str(), kinds.str(),
                                             delays.str(), errors.str(), results, workflows.str())
                          : tx.exec_prepared(name, ids.str(), tokens.str(), kinds.str(),
                                             delays.str(), errors.str(), results);
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

std::size_t OutcomeStore::write_leases(std::span<const LeaseWrite> leases) {
    if (leases.empty()) return 0;
    pg::ArrayLiteral ids, tokens, expires, beats, progress;
    for (const auto& lease : leases) {
        ids.add(lease.ref.id);
        tokens.add(lease.ref.token);
        expires.add(std::max<std::int64_t>(0, millis(lease.expires_in)));
        beats.add(std::string_view{lease.beat ? "t" : "f"});
        progress.add(lease.progress_json);
    }
    return session_.pg().autocommit(sql::kWriteLeases, [&](pqxx::nontransaction& tx) {
        return static_cast<std::size_t>(tx.exec_prepared(std::string{sql::kWriteLeases.name},
                                                         ids.str(), tokens.str(), expires.str(),
                                                         beats.str(), progress.str())
                                            .affected_rows());
    });
}

}  // namespace outboxd::store
