#include "invariant_checker.hpp"

#include <algorithm>

#include <pqxx/pqxx>

#include "delivery_log.hpp"
#include "done_rate.hpp"
#include "load_generator.hpp"
#include "redeliveries.hpp"

namespace outboxd::chaos {

namespace {

constexpr std::size_t kMaxExamples = 15;
constexpr std::int64_t kBucketMs = 100;
constexpr std::int64_t kBaselineMs = 5000;

void add_example(ChaosResult& result, const std::string& text) {
    if (result.examples.size() < kMaxExamples) result.examples.push_back(text);
}

}  // namespace

ChaosResult InvariantChecker::check(const RunFacts& facts) const {
    ChaosResult result;
    result.acknowledged = facts.acknowledged;
    result.drained = facts.drained;
    result.node_exits = facts.node_exits;
    result.worker_unexpected_exits = facts.worker_unexpected_exits;
    for (const auto& fault : facts.faults) {
        FaultOutcome outcome;
        outcome.record = fault;
        result.faults.push_back(outcome);
        result.unresponsive_nodes += fault.unresponsive_nodes;
    }
    check_rows(facts, result);
    check_recovery(facts, result);
    check_deliveries(facts, result);
    list_failures(result);
    return result;
}

void InvariantChecker::check_rows(const RunFacts& facts, ChaosResult& result) const {
    pqxx::connection connection{facts.database_url};
    pqxx::read_transaction tx{connection};
    std::int64_t acknowledged_present = 0;
    for (const auto& row : tx.exec("SELECT dispatch_key, status FROM outbox")) {
        const auto key = row[0].as<std::string>();
        const auto status = row[1].as<std::string>();
        ++result.rows;
        if (status == "done") {
            ++result.done;
        } else if (status == "failed") {
            ++result.failed;
        } else if (status == "cancelled") {
            ++result.cancelled;
        } else {
            ++result.unfinished;
            add_example(result, "unfinished: " + key + " is " + status);
        }
        const auto sequence = LoadGenerator::sequence_of(key);
        if (sequence < 0) add_example(result, "foreign row: " + key + " (not staged by the load)");
        if (sequence >= 0 && sequence < facts.acknowledged) ++acknowledged_present;
    }
    result.missing = facts.acknowledged - acknowledged_present;
    if (result.missing > 0) {
        add_example(result, "missing: " + std::to_string(result.missing) +
                                " acknowledged key(s) absent, e.g. between " +
                                LoadGenerator::key_of(0) + " and " +
                                LoadGenerator::key_of(facts.acknowledged - 1));
    }
    result.lost = result.missing + result.unfinished;
    result.overlapping_claims = audit_.overlapping_claims();
    result.rows_done_twice = audit_.rows_done_twice();
}

void InvariantChecker::check_deliveries(const RunFacts& facts, ChaosResult& result) const {
    DeliveryRecords records;
    for (std::size_t i = 0; i < facts.delivery_logs.size(); ++i) {
        read_delivery_log(facts.delivery_logs[i], static_cast<std::uint32_t>(i), records);
    }
    result.malformed_log_lines = static_cast<std::int64_t>(records.malformed);
    result.deliveries = static_cast<std::int64_t>(records.deliveries.size());

    for (const auto& end : audit_.done_claims()) {
        const auto task_id = std::to_string(end.row_id) + "." + std::to_string(end.claim_token);
        if (!records.completed.contains(task_id)) {
            ++result.stale_outcomes_applied;
            add_example(result, "stale outcome: row " + std::to_string(end.row_id) +
                                    " went done under claim " + task_id +
                                    ", which no worker completed");
        }
    }

    std::vector<FaultWindow> windows;
    for (const auto& fault : result.faults)
        windows.push_back({fault.record.start_ms, fault.record.end_ms});
    const auto redeliveries =
        attribute_redeliveries(records.deliveries, windows, settings_.task_timeout.count(),
                               settings_.fault_grace().count());
    result.duplicates = redeliveries.total;
    result.unexplained_redeliveries = static_cast<std::int64_t>(redeliveries.unexplained.size());
    std::vector<FaultKind> kinds;
    for (std::size_t i = 0; i < windows.size(); ++i) {
        result.faults[i].redeliveries = redeliveries.per_fault[i];
        kinds.push_back(result.faults[i].record.kind);
    }
    result.duplicates_by_kind = redeliveries_by_kind(kinds, redeliveries.per_fault);
    for (const auto& [earlier, again] : redeliveries.unexplained) {
        add_example(result, "unexplained redelivery: " + again.dispatch_key + " delivered at " +
                                std::to_string(earlier.at_ms) + " (" + earlier.task_id +
                                ") and again at " + std::to_string(again.at_ms) + " (" +
                                again.task_id + ", attempt " + std::to_string(again.attempt) + ")");
    }
}

void InvariantChecker::check_recovery(const RunFacts& facts, ChaosResult& result) const {
    const DoneRate done_rate{audit_.done_per_bucket(kBucketMs), audit_.staged_per_bucket(kBucketMs),
                             kBucketMs};
    for (std::size_t i = 0; i < result.faults.size(); ++i) {
        auto& outcome = result.faults[i];
        const auto& fault = outcome.record;
        // A fault has until the next one starts (or the load stops) to recover.
        const auto limit = i + 1 < result.faults.size() ? result.faults[i + 1].record.start_ms
                                                        : facts.load_stopped_ms;
        const auto recovery = done_rate.recovery(fault.start_ms, fault.end_ms, limit, kBaselineMs);
        outcome.pre_rate = recovery.pre_rate;
        outcome.min_rate = recovery.min_rate;
        outcome.peak_backlog = recovery.peak_backlog;
        outcome.recovery_s = recovery.seconds;
        outcome.catch_up_s = recovery.since_start;
        if (recovery.seconds) {
            result.recovery_s_max = std::max(result.recovery_s_max, *recovery.seconds);
            result.catch_up_s_max = std::max(result.catch_up_s_max, *recovery.since_start);
        } else {
            ++result.not_recovered;
        }
        for (const auto& exit : facts.node_exits) {
            if (exit.at_ms >= fault.start_ms && exit.at_ms < limit) ++outcome.node_exits;
        }
    }
}

void InvariantChecker::list_failures(ChaosResult& result) {
    auto& failures = result.failures;
    if (!result.drained) failures.push_back("the backlog did not drain after the load stopped");
    if (result.lost > 0) {
        failures.push_back(std::to_string(result.lost) + " row(s) lost (" +
                           std::to_string(result.missing) + " missing, " +
                           std::to_string(result.unfinished) + " not terminal)");
    }
    if (result.stale_outcomes_applied > 0) {
        failures.push_back(std::to_string(result.stale_outcomes_applied) +
                           " outcome(s) applied from a stale claim");
    }
    if (result.overlapping_claims > 0) {
        failures.push_back(std::to_string(result.overlapping_claims) +
                           " claim(s) replaced by another claim without ending");
    }
    if (result.rows_done_twice > 0) {
        failures.push_back(std::to_string(result.rows_done_twice) + " row(s) went to done twice");
    }
    if (result.unexplained_redeliveries > 0) {
        failures.push_back(std::to_string(result.unexplained_redeliveries) +
                           " redelivery(ies) of rows not in flight at any fault");
    }
    if (!result.node_exits.empty()) {
        failures.push_back(std::to_string(result.node_exits.size()) + " unexpected node exit(s)");
    }
    if (result.unresponsive_nodes > 0) {
        failures.push_back(std::to_string(result.unresponsive_nodes) +
                           " node(s) did not answer /healthz after the hostile client");
    }
    if (result.not_recovered > 0) {
        failures.push_back("the done rate did not recover after " +
                           std::to_string(result.not_recovered) + " fault(s)");
    }
    for (const auto& fault : result.faults) {
        if (!fault.record.injected && fault.record.kind != FaultKind::kill_worker) {
            failures.push_back(std::string{name_of(fault.record.kind)} +
                               " could not be injected: " + fault.record.note);
        }
    }
}

}  // namespace outboxd::chaos
