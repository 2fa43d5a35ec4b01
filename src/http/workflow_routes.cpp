// Workflows (README, "HTTP API"): a workflow's rows, pause, resume, cancel and uncancel.

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "api_json.hpp"
#include "api_routes.hpp"

namespace outboxd::http {
namespace {

// An optional boolean query parameter: false when absent, nullopt when neither true nor false.
std::optional<bool> parse_flag(const std::map<std::string, std::string>& query,
                               const std::string& name) {
    const auto it = query.find(name);
    if (it == query.end() || it->second == "false") return false;
    if (it->second == "true") return true;
    return std::nullopt;
}

// The dead letter that holds the workflow back (ordered delivery, on_dead_letter block):
// the first failed row with a pending row after it whose namespace's dead letters block.
std::optional<std::string> blocked_by(const std::vector<store::OutboxRow>& rows,
                                      const std::function<bool(const std::string&)>& blocks) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].status != store::Status::failed) continue;
        const bool later_pending = std::any_of(
            rows.begin() + static_cast<std::ptrdiff_t>(i) + 1, rows.end(),
            [](const store::OutboxRow& r) { return r.status == store::Status::pending; });
        if (later_pending && blocks(rows[i].namespace_name)) return rows[i].dispatch_key;
    }
    return std::nullopt;
}

void rows(const ApiContext& api, const RouteRequest& r, Respond respond) {
    const auto limit = parse_limit(r.target.query);
    if (!limit) return respond(bad_limit());
    const auto all = parse_flag(r.target.query, "all");
    if (!all) return respond(error_response(400, "invalid_request", "all must be true or false"));
    api.on_lane(
        r.database(),
        [workflow = r.params[0], limit = *limit, all = *all, grant = r.grant,
         database = r.database().name()](store::AdminStores& db) {
            auto found = all ? db.admin.all_workflow_rows(workflow, limit)
                             : db.admin.workflow_rows(workflow, limit);
            // A reader sees its namespaces' rows, as if the others were not there.
            const bool everywhere = grant->may_everywhere(auth::Role::reader);
            if (!everywhere) {
                std::erase_if(found, [&](const store::OutboxRow& row) {
                    return !grant->may(auth::Role::reader, row.namespace_name);
                });
            }
            std::map<std::string, bool> blocking;  // by namespace: whether its dead letters block
            const auto blocks = [&](const std::string& ns) {
                auto known = blocking.find(ns);
                if (known == blocking.end()) {
                    const auto settings = db.admin.get_namespace(ns);
                    known = blocking
                                .emplace(ns, settings &&
                                                 settings->controls.ordering ==
                                                     store::Ordering::workflow &&
                                                 settings->controls.on_dead_letter ==
                                                     store::OnDeadLetter::block)
                                .first;
                }
                return known->second;
            };
            const auto held_by = blocked_by(found, blocks);
            // A workflow none of whose rows it sees is, to a scoped reader, one never staged.
            const auto flags = everywhere || !found.empty() ? db.admin.workflow_flags(workflow)
                                                            : store::WorkflowFlags{};
            return text_response(with_database(workflow_json(workflow, found, flags, held_by,
                                                             [&grant](const std::string& ns) {
                                                                 return grant->may(
                                                                     auth::Role::read_payloads, ns);
                                                             }),
                                               database));
        },
        std::move(respond));
}

// Why a workflow-wide change is refused to `grant`, or nothing. Pause, resume and cancel
// apply to a workflow id in every namespace (and cancel to rows staged later under it): an
// operator of some namespaces only may change a workflow whose rows all lie in them, and
// one that has rows (else it could cancel an id another tenant will use).
std::optional<ApiResponse> workflow_refusal(const auth::Grant& grant, store::AdminStores& db,
                                            const std::string& workflow) {
    if (grant.may_everywhere(auth::Role::operator_)) return std::nullopt;
    const auto namespaces = db.admin.workflow_namespaces(workflow);
    const auto visible = std::count_if(namespaces.begin(), namespaces.end(), [&](const auto& ns) {
        return grant.may(auth::Role::reader, ns);
    });
    if (visible == 0)
        return not_found("no workflow '" + workflow + "' in this credential's namespaces");
    for (const auto& ns : namespaces) {
        if (!grant.may(auth::Role::operator_, ns)) {
            return forbidden(auth::Role::operator_,
                             "every namespace of workflow '" + workflow + "'");
        }
    }
    return std::nullopt;
}

// The namespace a workflow change is recorded under: the caller's one when it has one.
std::optional<std::string> audit_namespace(const auth::Grant& grant) {
    const auto names = grant.namespaces_for(auth::Role::operator_);
    if (names && names->size() == 1) return names->front();
    return std::nullopt;
}

// A resume's statement wakes every node, this one included, to claim from the front: the
// resumed rows wait behind where claims read on.
RouteHandler pause_or_resume(const ApiContext& api, bool pause) {
    return [&api, pause](const RouteRequest& r, Respond respond) {
        api.change(
            r, r.database(), audit_namespace(*r.grant),
            [workflow = r.params[0], pause, grant = r.grant](store::AdminStores& db) {
                if (auto refused = workflow_refusal(*grant, db, workflow)) return *refused;
                const bool changed =
                    pause ? db.admin.pause_workflow(workflow) : db.admin.resume_workflow(workflow);
                return json_response(
                    {{"workflow_id", workflow}, {"paused", pause}, {"changed", changed}});
            },
            std::move(respond));
    };
}

void cancel(const ApiContext& api, const RouteRequest& r, Respond respond) {
    auto* metrics = &api.services().metrics;
    api.change(
        r, r.database(), audit_namespace(*r.grant),
        [workflow = r.params[0], metrics, grant = r.grant](store::AdminStores& db) {
            if (auto refused = workflow_refusal(*grant, db, workflow)) return *refused;
            const auto cancelled = db.admin.cancel_workflow(workflow);
            // Prometheus counters are thread-safe; the label cache is not, so use Add.
            for (const auto& [ns, count] : cancelled.by_namespace) {
                metrics->outcomes_total.Add({{"namespace", ns}, {"outcome", "cancelled"}})
                    .Increment(static_cast<double>(count));
            }
            return json_response({{"workflow_id", workflow}, {"cancelled", cancelled.keys}});
        },
        std::move(respond));
}

// Idempotent: {"uncancelled":false} for a workflow that was not cancelled.
void uncancel(const ApiContext& api, const RouteRequest& r, Respond respond) {
    api.change(
        r, r.database(), audit_namespace(*r.grant),
        [workflow = r.params[0], grant = r.grant](store::AdminStores& db) {
            if (auto refused = workflow_refusal(*grant, db, workflow)) return *refused;
            const bool forgotten = db.admin.uncancel_workflow(workflow);
            return json_response({{"workflow_id", workflow}, {"uncancelled", forgotten}});
        },
        std::move(respond));
}

}  // namespace

void add_workflow_routes(RouteTable& table, const ApiContext& api) {
    using auth::Role;
    table.add({"GET", "/v1/workflows/{id}", Access::needs(Role::reader),
               [&api](const RouteRequest& r, Respond respond) { rows(api, r, std::move(respond)); },
               Databases::one});
    table.add({"POST", "/v1/workflows/{id}/pause", Access::needs(Role::operator_),
               pause_or_resume(api, true), Databases::one});
    table.add({"POST", "/v1/workflows/{id}/resume", Access::needs(Role::operator_),
               pause_or_resume(api, false), Databases::one});
    table.add(
        {"POST", "/v1/workflows/{id}/cancel", Access::needs(Role::operator_),
         [&api](const RouteRequest& r, Respond respond) { cancel(api, r, std::move(respond)); },
         Databases::one});
    table.add(
        {"POST", "/v1/workflows/{id}/uncancel", Access::needs(Role::operator_),
         [&api](const RouteRequest& r, Respond respond) { uncancel(api, r, std::move(respond)); },
         Databases::one});
}

}  // namespace outboxd::http
