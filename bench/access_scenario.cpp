#include "access_scenario.hpp"

#include <algorithm>
#include <string>

#include <openssl/evp.h>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "bench_database.hpp"
#include "node_fleet.hpp"
#include "report_format.hpp"

namespace outboxd::bench {
namespace {

constexpr int kNamespaces = 50;
constexpr int kCredentials = 1000;
constexpr const char* kAdminToken = "bench-admin-token";
constexpr const char* kWorkerToken = "bench-worker-token";
constexpr const char* kManagedSecret = "obx_bench-managed-worker-secret";

std::string sha256_hex(const std::string& text) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) hex += strf("%02x", static_cast<unsigned>(digest[i]));
    return hex;
}

std::vector<std::string> namespaces() {
    std::vector<std::string> names;
    for (int i = 0; i < kNamespaces; ++i) names.push_back("ns-" + std::to_string(i));
    return names;
}

// 999 credentials of other tenants and one worker of every namespace the rows are in.
void add_credentials(const std::string& url) {
    pqxx::connection conn{url};
    pqxx::work tx{conn};
    tx.exec0(
        "INSERT INTO credentials (id, name, secret_sha256, namespaces, roles, created_by)"
        " SELECT 'cred_bench' || g, 'bench-' || g, md5(g::text) || md5('x' || g::text),"
        "        ARRAY['tenant-' || g], ARRAY['worker', 'reader'], 'bench'"
        " FROM generate_series(1, " +
        std::to_string(kCredentials - 1) + ") g");
    tx.exec_params0(
        "INSERT INTO credentials (id, name, secret_sha256, namespaces, roles, created_by)"
        " VALUES ('cred_bench_worker', 'bench-worker', $1, $2::text[], ARRAY['worker'], 'bench')",
        sha256_hex(kManagedSecret), text_array(namespaces()));
    tx.commit();
}

E2eResult run(const BenchContext& context, bool managed, const std::string& tag) {
    const auto& settings = context.settings;
    const auto database = "bench_" + tag;
    const auto url = context.databases.create_migrated(database);
    spdlog::info("{}: staging {} rows over {} namespaces ({})", tag, settings.rows, kNamespaces,
                 managed ? "1,000 managed credentials" : "bootstrap tokens");
    stage_routed_rows(url, settings.rows, "access-", namespaces(), {"default"});
    if (managed) add_credentials(url);
    settle(url);
    auto guarded = settings;
    guarded.node_env.emplace_back("OUTBOXD_ADMIN_TOKEN", kAdminToken);
    if (!managed) guarded.node_env.emplace_back("OUTBOXD_WORKER_TOKEN", kWorkerToken);
    const BenchContext bench_context{guarded, context.databases, context.pg_cpu};
    DrainOptions options;
    WorkerGroup group{"worker", settings.worker_processes, namespaces(), "default",
                      settings.worker_max_in_flight};
    group.token = managed ? kManagedSecret : kWorkerToken;
    options.workers.push_back(group);
    auto result = drain_e2e(bench_context, url, 1, tag, options);
    context.databases.drop(database);
    return result;
}

std::optional<double> managed_ratio(const std::vector<E2eResult>& bootstrap,
                                    const std::vector<E2eResult>& managed) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < std::min(bootstrap.size(), managed.size()); ++i) {
        if (bootstrap[i].rows_per_s() > 0)
            ratios.push_back(managed[i].rows_per_s() / bootstrap[i].rows_per_s());
    }
    return median(ratios);
}

}  // namespace

void AccessScenario::repeat(const Turn& turn) {
    // Turned order each repetition: drift hits both alike.
    const bool managed_first = turn.repetition % 2 == 0;
    for (const bool managed : {managed_first, !managed_first}) {
        auto result =
            run(turn.context, managed,
                std::string{managed ? "access_managed" : "access_bootstrap"} + turn.suffix());
        (managed ? managed_ : bootstrap_).push_back(result);
    }
}

void AccessScenario::render_table(const BenchSettings& /*settings*/,
                                  const ScenarioRegistry& /*registry*/, ReportTable& table) const {
    if (bootstrap_.empty() || managed_.empty()) return;
    const auto ratio = managed_ratio(bootstrap_, managed_);
    table.put(std::string{kName},
              strf("  access, 50 namespaces: bootstrap tokens %s rows/s, 1,000 managed "
                   "credentials %s rows/s: median ratio %.3f (target >= 0.95: %s)\n",
                   runs_list(bootstrap_).c_str(), runs_list(managed_).c_str(), ratio.value_or(0),
                   verdict(ratio && *ratio >= 0.95).c_str()));
}

void AccessScenario::add_json(const ScenarioRegistry& /*registry*/, nlohmann::json& out) const {
    out["access_managed_ratio"] = nullptr;
    if (bootstrap_.empty() || managed_.empty()) return;
    if (const auto ratio = managed_ratio(bootstrap_, managed_)) {
        out["access_managed_ratio"] = json_fine(*ratio);
    }
    for (const auto& run : bootstrap_)
        out["access_bootstrap_rows_per_s"].push_back(json_rate(run.rows_per_s()));
    for (const auto& run : managed_)
        out["access_managed_rows_per_s"].push_back(json_rate(run.rows_per_s()));
}

double AccessScenario::max_foreign_cpu() const {
    double worst = 0;
    for (const auto* runs : {&bootstrap_, &managed_}) {
        for (const auto& run : *runs) worst = std::max(worst, run.foreign_cpu);
    }
    return worst;
}

}  // namespace outboxd::bench
