#include "weighted_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "http_client.hpp"
#include "namespace_shares.hpp"
#include "outboxd/worker/protocol.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

constexpr std::chrono::milliseconds kPollInterval{100};
// Target of the many-routes issue.
constexpr double kTargetWeightedError = 0.15;
const std::vector<double> kWeights{1, 2, 4};
// Each worker's credit in node batches. The node sends its next claim round before the
// answers to the last one are back, so a namespace holds about two rounds of its share in
// flight: the weight-4 namespace (4/7 of a 1,024-row batch a round) would run out of a
// 1,024 credit, and work-conserving sharing would hand its part to the others (measured:
// shares 0.178 / 0.320 / 0.502 with 1,024, 0.142 / 0.285 / 0.573 with 4,096). With ample
// credit the batch, not a worker, is what the weights divide.
constexpr int kCreditInBatches = 4;

// nullopt when the node took the weight; otherwise why not. Only a refusal (4xx) is an
// answer: a node that fails (5xx) or cannot be reached fails the scenario.
std::optional<std::string> put_weight(const std::string& http_url, const std::string& ns,
                                      double weight) {
    const auto reply =
        http_request(http_url, "PUT", "/v1/namespaces/" + ns,
                     R"({"weight":)" + std::to_string(static_cast<int>(weight)) + "}");
    if (reply.status >= 200 && reply.status < 300) return std::nullopt;
    if (reply.status >= 400 && reply.status < 500) {
        if (reply.body.find("unknown field 'weight'") != std::string::npos) {
            return "weights not supported by this build";
        }
        return "PUT /v1/namespaces/" + ns + " refused the weight: " + std::to_string(reply.status) +
               " " + reply.body;
    }
    throw std::runtime_error{"PUT /v1/namespaces/" + ns + ": " + std::to_string(reply.status) +
                             " " + reply.body};
}

WeightedResult run_weighted(const BenchContext& context) {
    const auto& settings = context.settings;
    WeightedResult result;
    result.weights = kWeights;
    for (const double weight : kWeights) {
        result.namespaces.push_back("weight-" + std::to_string(static_cast<int>(weight)));
    }
    const std::string database = "bench_weighted";
    const auto url = context.databases.create_migrated(database);
    const auto fleet_settings = context.fleet(url);
    NodeFleet fleet{fleet_settings, 1, "weighted"};
    // Weights first: with a node that cannot take them nothing is staged or drained.
    for (std::size_t i = 0; i < kWeights.size(); ++i) {
        if (auto refused =
                put_weight(fleet.http_urls().front(), result.namespaces[i], kWeights[i])) {
            result.note = *refused;
            spdlog::warn("weighted: {}; no figure", result.note);
            fleet.stop();
            context.databases.drop(database);
            return result;
        }
    }
    result.supported = true;
    spdlog::info("weighted: weights 1:2:4 set; staging {} rows per namespace",
                 settings.weighted_rows);
    const auto per_namespace = settings.weighted_rows;
    stage_routed_rows(url, per_namespace * static_cast<std::int64_t>(kWeights.size()), "weighted-",
                      result.namespaces, {"default"});
    settle(url);
    // Staging and settling took longer than this already, but a run of small sizes may not.
    std::this_thread::sleep_for(settings_ttl(settings) + kSettingsMargin);

    const int credit = std::min(
        worker::protocol::kMaxCreditWindow,
        std::max(settings.worker_max_in_flight, kCreditInBatches * settings.node_batch_size));
    std::vector<WorkerGroup> groups;
    for (const auto& ns : result.namespaces) {
        groups.push_back({"worker-" + ns, 1, {ns}, "default", credit});
    }
    WorkerFleet workers{fleet_settings, groups, fleet.worker_urls().front(), "weighted"};
    // Only the span in which all three have rows to do counts: stop once one has none left.
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(settings.e2e_max_seconds));
    for (bool dry = false; !dry;) {
        std::this_thread::sleep_for(kPollInterval);
        fleet.check_alive();
        workers.check_alive();
        for (const auto& ns : result.namespaces) dry = dry || fleet.rows_done(ns) >= per_namespace;
        if (std::chrono::steady_clock::now() > deadline) {
            spdlog::warn("weighted: stopped at {:.0f} s with every namespace still backlogged",
                         settings.e2e_max_seconds);
            break;
        }
    }
    workers.stop();
    fleet.stop();

    const auto shares = read_namespace_shares(url, result.namespaces, 0);
    result.span_seconds = shares.span_seconds;
    result.rows = shares.rows();
    result.together = shares.together;
    for (const auto rows : shares.totals) {
        result.shares.push_back(result.rows > 0 ? static_cast<double>(rows) / result.rows : 0.0);
    }
    result.max_error = max_share_error(shares.totals, kWeights);
    spdlog::info(
        "weighted: shares {:.3f} / {:.3f} / {:.3f} over {:.1f} s ({} rows): worst "
        "relative error {:.3f}",
        result.shares[0], result.shares[1], result.shares[2], result.span_seconds, result.rows,
        result.max_error);
    context.databases.drop(database);
    return result;
}

}  // namespace

void WeightedScenario::once(const Turn& turn) { result_ = run_weighted(turn.context); }

void WeightedScenario::render_table(const BenchSettings& settings,
                                    const ScenarioRegistry& /*registry*/,
                                    ReportTable& table) const {
    if (!result_) return;
    const auto& w = *result_;
    if (!w.supported) {
        table.put(std::string{kName}, strf("  weights 1:2:4: no figure (%s)\n", w.note.c_str()));
        return;
    }
    table.put(std::string{kName},
              strf("  weights 1:2:4, %lld rows each: shares %.3f / %.3f / %.3f over %.1f s (%lld "
                   "rows%s), worst relative error %.3f (target <= %.2f: %s)\n",
                   static_cast<long long>(settings.weighted_rows), w.shares.at(0), w.shares.at(1),
                   w.shares.at(2), w.span_seconds, static_cast<long long>(w.rows),
                   w.together ? "" : ", NOT all backlogged together", w.max_error,
                   kTargetWeightedError, verdict(w.max_error <= kTargetWeightedError).c_str()));
}

void WeightedScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["weighted_share_err"] = nullptr;
    if (!result_) return;
    const auto& w = *result_;
    if (!w.supported) {
        out["weighted_note"] = w.note;
        return;
    }
    out["weighted_share_err"] = json_fine(w.max_error);
    for (const double share : w.shares) out["weighted_shares"].push_back(json_fine(share));
    out["weighted_span_s"] = json_fine(w.span_seconds);
    out["weighted_rows"] = w.rows;
    out["weighted_together"] = w.together;
}

}  // namespace outboxd::bench
