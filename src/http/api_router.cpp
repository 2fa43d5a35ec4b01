#include "api_router.hpp"

#include <algorithm>
#include <map>
#include <span>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "dead_letter_params.hpp"
#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "row_parser.hpp"
#include "time_format.hpp"
#include "ui_assets.hpp"

namespace outboxd::http {
namespace {

using nlohmann::json;

ApiResponse ok(const json& body, int status = 200) {
    return {status, "application/json", json_text(body)};
}

// How much of a request's own target an error message echoes.
constexpr std::size_t kEchoBytes = 200;

// The row as JSON text. Its input is spliced as stored, never parsed: a row inserted by
// plain SQL may nest deeper than anything outboxd would build, and re-serializing recurses
// once per level.
std::string row_json(const store::OutboxRow& row) {
    json fields = {{"dispatch_key", row.dispatch_key},
                   {"workflow_id", row.workflow_id},
                   {"ordinal", row.ordinal},
                   {"run_id", optional_json(row.run_id)},
                   {"namespace", row.namespace_name},
                   {"task_queue", row.task_queue},
                   {"node", optional_json(row.node)},
                   {"activity_type", row.activity_type},
                   {"status", store::to_string(row.status)},
                   {"attempt", row.attempt},
                   {"visible_after", format_rfc3339(row.visible_after)},
                   {"claimed_at", optional_time(row.claimed_at)},
                   {"claimed_by", optional_json(row.claimed_by)},
                   {"last_error", optional_json(row.last_error)},
                   {"created_at", format_rfc3339(row.created_at)},
                   {"finished_at", optional_time(row.finished_at)},
                   {"shard", row.shard},
                   {"priority", row.priority},
                   {"waiting", row.waiting},
                   {"traceparent", optional_json(row.traceparent)},
                   {"heartbeat_at", optional_time(row.heartbeat_at)}};
    std::string text = json_text(fields);
    text.pop_back();  // the closing brace
    text += R"(,"input":)";
    text += row.input_json.empty() ? "null" : row.input_json;
    // The result too, as stored (jsonb text): null when the row has none.
    text += R"(,"result":)";
    text += row.result_json ? *row.result_json : "null";
    text += R"(,"progress":)";
    text += row.progress_json ? *row.progress_json : "null";
    text += '}';
    return text;
}

// GET /v1/workflows/{id}: the rows its order depends on, and the dead letter that holds it
// back, if one does (ordered delivery, on_dead_letter block).
std::string workflow_json(const std::string& workflow, const std::vector<store::OutboxRow>& rows,
                          store::AdminStore& admin) {
    const auto flags = admin.workflow_flags(workflow);
    std::optional<std::string> blocked_by;
    std::map<std::string, bool> blocking;  // by namespace: whether its dead letters block
    for (std::size_t i = 0; i < rows.size() && !blocked_by; ++i) {
        if (rows[i].status != store::Status::failed) continue;
        const bool later_pending = std::any_of(
            rows.begin() + static_cast<std::ptrdiff_t>(i) + 1, rows.end(),
            [](const store::OutboxRow& r) { return r.status == store::Status::pending; });
        if (!later_pending) continue;
        const auto& ns = rows[i].namespace_name;
        auto known = blocking.find(ns);
        if (known == blocking.end()) {
            const auto settings = admin.get_namespace(ns);
            known =
                blocking
                    .emplace(ns,
                             settings && settings->controls.ordering == store::Ordering::workflow &&
                                 settings->controls.on_dead_letter == store::OnDeadLetter::block)
                    .first;
        }
        if (known->second) blocked_by = rows[i].dispatch_key;
    }
    std::string text = json_text(json{{"workflow_id", workflow},
                                      {"blocked_by", optional_json(blocked_by)},
                                      {"paused", flags.paused},
                                      {"cancelled", flags.cancelled}});
    text.pop_back();  // the closing brace
    text += R"(,"rows":[)";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (i > 0) text += ',';
        text += row_json(rows[i]);
    }
    text += "]}";
    return text;
}

json rate_json(const std::optional<store::RateLimit>& rate) {
    if (!rate) return nullptr;
    return {{"per_second", rate->per_second}, {"burst", rate->burst}};
}

json namespace_json(const std::string& name, const std::optional<store::NamespaceSettings>& s,
                    std::int64_t default_quota) {
    const auto quota = s ? s->max_in_flight : std::nullopt;
    const store::DeliveryControls defaults;
    const auto& controls = s ? s->controls : defaults;
    json activities = json::object();
    for (const auto& [type, policy] : controls.activities) {
        // Every field, null when unset (it falls back to "*", then to the node's setting).
        const auto or_null = [](const auto& value) { return value ? json(*value) : json(nullptr); };
        json backoff = nullptr;
        if (const auto& b = policy.backoff) {
            backoff = {{"base_ms", or_null(b->base_ms)},
                       {"multiplier", or_null(b->multiplier)},
                       {"max_ms", or_null(b->max_ms)}};
        }
        activities[type] = {{"max_in_flight", or_null(policy.max_in_flight)},
                            {"rate_limit", rate_json(policy.rate_limit)},
                            {"max_attempts", or_null(policy.max_attempts)},
                            {"timeout_ms", or_null(policy.timeout_ms)},
                            {"heartbeat_timeout_ms", or_null(policy.heartbeat_timeout_ms)},
                            {"backoff", backoff}};
    }
    return {{"namespace", name},
            {"ordering", store::to_string(controls.ordering)},
            {"on_dead_letter", store::to_string(controls.on_dead_letter)},
            {"rate_limit", rate_json(controls.rate_limit)},
            {"activities", activities},
            {"configured", s.has_value()},
            {"max_in_flight", quota ? json(*quota) : json(nullptr)},
            {"effective_max_in_flight", quota ? static_cast<std::int64_t>(*quota) : default_quota},
            {"placement",
             {{"mode", store::to_string(s ? s->placement.mode : store::PlacementMode::unplaced)},
              {"nodes", s ? s->placement.nodes : std::vector<std::string>{}}}},
            {"weight", s ? s->weight : 1},
            {"keep_results", s ? s->keep_results : true}};
}

std::optional<std::int32_t> parse_limit(const std::map<std::string, std::string>& query) {
    const auto it = query.find("limit");
    if (it == query.end()) return 100;
    try {
        std::size_t used = 0;
        const int value = std::stoi(it->second, &used);
        if (used != it->second.size() || value < 1 || value > kMaxListLimit) return std::nullopt;
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// An optional boolean query parameter: false when absent, nullopt when neither true nor false.
std::optional<bool> parse_flag(const std::map<std::string, std::string>& query,
                               const std::string& name) {
    const auto it = query.find(name);
    if (it == query.end() || it->second == "false") return false;
    if (it->second == "true") return true;
    return std::nullopt;
}

ApiResponse bad_limit() {
    return error_response(
        400, "invalid_request",
        "limit must be an integer between 1 and " + std::to_string(kMaxListLimit));
}

ApiResponse not_found(std::string_view what) { return error_response(404, "not_found", what); }

}  // namespace

ApiRouter::ApiRouter(boost::asio::any_io_executor loop, NodeServices services,
                     ServerSettings settings)
    : loop_(std::move(loop)), services_(std::move(services)), settings_(std::move(settings)) {}

bool ApiRouter::admin_allowed(const std::optional<std::string>& bearer) const {
    return !settings_.admin_token || token_matches(bearer, *settings_.admin_token);
}

bool ApiRouter::worker_allowed(const std::optional<std::string>& bearer) const {
    return !settings_.worker_token || token_matches(bearer, *settings_.worker_token);
}

bool ApiRouter::admits(std::string_view target, const std::optional<std::string>& bearer,
                       bool upgrade) const {
    const auto parsed = parse_target(target);
    const auto* route = std::get_if<ParsedTarget>(&parsed);
    if (!route) return admin_allowed(bearer);
    const auto& seg = route->segments;
    if (seg.empty() || seg[0] != "v1") return true;  // probes, metrics, or a 404
    // The upgrade checks the worker token itself; any other request there is an admin's.
    if (upgrade && seg.size() == 2 && seg[1] == "workers") return true;
    if (seg.size() == 2 && seg[1] == "cluster")
        return admin_allowed(bearer) || worker_allowed(bearer);
    return admin_allowed(bearer);
}

void ApiRouter::on_lane(Job job, Respond respond) {
    // Shared with the job, so that a request the full lane refuses is still answered; only
    // ever called, and released, on the loop thread.
    auto answer = std::make_shared<Respond>(std::move(respond));
    auto* faults = &services_.metrics.faults_total;
    const bool queued = services_.engines.primary().admin_lane().call(
        loop_, lifetime_.watch(),
        [job = std::move(job), faults](store::AdminStores& db) {
            try {
                return job(db);
            } catch (const store::ValidationError& error) {
                // The data: the message names what is wrong, for the client to fix.
                return error_response(400, "invalid_request", error.what());
            } catch (const store::UnavailableError& error) {
                // Details (hosts, SQL) go to the log, not to the client.
                spdlog::warn("event=api_database_unavailable error=\"{}\"",
                             util::log_safe(error.what()));
                return error_response(503, "database_unavailable",
                                      "the database cannot be reached; try again");
            } catch (const store::ConflictError& error) {
                spdlog::info("event=api_conflict error=\"{}\"", util::log_safe(error.what()));
                return error_response(503, "conflict",
                                      "the database was busy (a conflict or a timeout); try again");
            } catch (const std::exception& error) {
                faults->Add({{"where", "api"}}).Increment();  // Family::Add is thread-safe
                spdlog::error("event=fault where=api error=\"{}\"", util::log_safe(error.what()));
                return error_response(500, "internal", "the request failed unexpectedly");
            }
        },
        [answer](store::LaneResult<ApiResponse> done) { (*answer)(std::move(done.value)); });
    if (!queued) {
        (*answer)(error_response(503, "busy",
                                 "too many API requests are waiting for the database; try again"));
    }
}

std::string ApiRouter::cluster_json() const {
    json nodes = json::array();
    for (const auto& node : services_.engines.primary().member().nodes()) {
        json shards = json::array();
        for (const auto& [lo, hi] : node.shards.ranges()) shards.push_back({lo, hi});
        nodes.push_back({{"node_id", node.node_id},
                         {"url", node.advertise_url},
                         {"draining", node.draining},
                         {"shards", shards}});
    }
    return json_text(json{{"nodes", nodes}});
}

void ApiRouter::handle(const ApiRequest& request, Respond respond) {
    const auto parsed = parse_target(request.target);
    if (const auto* error = std::get_if<TargetError>(&parsed)) {
        // A guarded node tells a client without the token nothing, not even what is wrong.
        if (!admin_allowed(request.bearer)) {
            return respond(
                error_response(401, "unauthorized", "a valid admin bearer token is required"));
        }
        return respond(error_response(400, "bad_target", error->message));
    }
    const auto* target = &std::get<ParsedTarget>(parsed);
    const auto& seg = target->segments;
    const auto echoed = util::sanitize_text(request.target, kEchoBytes);
    const auto& method = request.method;
    const auto route_is = [&seg](std::initializer_list<const char*> parts) {
        if (seg.size() != parts.size()) return false;
        std::size_t i = 0;
        for (const char* part : parts) {
            if (*part != '*' && seg[i] != part) return false;
            ++i;
        }
        return true;
    };
    const auto only = [&](const char* allowed) -> bool {
        if (method == allowed) return true;
        respond(error_response(405, "method_not_allowed",
                               method + " is not allowed here; use " + allowed));
        return false;
    };

    // Probes and metrics are open.
    if (route_is({"healthz"})) {
        if (only("GET")) respond(ok({{"status", "ok"}}));
        return;
    }
    if (route_is({"readyz"})) {
        if (!only("GET")) return;
        const bool ready = services_.ready();
        return respond(ok(
            {{"ready", ready}, {"registered", services_.engines.primary().member().registered()}},
            ready ? 200 : 503));
    }
    if (route_is({"metrics"})) {
        if (only("GET")) {
            respond(
                {200, "text/plain; version=0.0.4", metrics::serialize(services_.metrics_registry)});
        }
        return;
    }
    if (!seg.empty() && seg[0] == "ui") {
        if (!only("GET")) return;
        const std::string_view path{request.target.data(),
                                    std::min(request.target.find('?'), request.target.size())};
        return respond(ui_response(std::span{seg}.subspan(1), path.ends_with('/')));
    }
    if (seg.empty() || seg[0] != "v1") return respond(not_found("no such route: " + echoed));

    // Workers discover the cluster here, so either token opens it.
    if (route_is({"v1", "cluster"})) {
        // The token first, as admits() decides: a client without one learns nothing, not
        // even which methods the route takes.
        if (!admin_allowed(request.bearer) && !worker_allowed(request.bearer)) {
            return respond(error_response(401, "unauthorized", "a valid bearer token is required"));
        }
        if (!only("GET")) return;
        return respond({200, "application/json", cluster_json()});
    }
    if (!admin_allowed(request.bearer)) {
        services_.metrics.protocol_errors_total.Add({{"code", "unauthorized"}}).Increment();
        return respond(
            error_response(401, "unauthorized", "a valid admin bearer token is required"));
    }

    if (route_is({"v1", "outbox"})) {
        if (only("POST")) stage(request, std::move(respond));
        return;
    }
    if (route_is({"v1", "outbox", "*"})) {
        if (!only("GET")) return;
        return on_lane(
            [key = seg[2]](store::AdminStores& db) {
                const auto row = db.admin.find(key);
                return row ? ApiResponse{200, "application/json", row_json(*row)}
                           : not_found("no outbox row with dispatch_key '" + key + "'");
            },
            std::move(respond));
    }
    if (route_is({"v1", "workflows", "*"})) {
        if (!only("GET")) return;
        const auto limit = parse_limit(target->query);
        if (!limit) return respond(bad_limit());
        const auto all = parse_flag(target->query, "all");
        if (!all)
            return respond(error_response(400, "invalid_request", "all must be true or false"));
        return on_lane(
            [workflow = seg[2], limit = *limit, all = *all](store::AdminStores& db) {
                const auto rows = all ? db.admin.all_workflow_rows(workflow, limit)
                                      : db.admin.workflow_rows(workflow, limit);
                return ApiResponse{200, "application/json",
                                   workflow_json(workflow, rows, db.admin)};
            },
            std::move(respond));
    }
    if (route_is({"v1", "workflows", "*", "*"})) {
        if (!only("POST")) return;
        const std::string workflow = seg[2];
        const std::string action = seg[3];
        if (action == "pause" || action == "resume") {
            // A resume's statement wakes every node, this one included, to claim from the
            // front: the resumed rows wait behind where claims read on.
            return on_lane(
                [workflow, action](store::AdminStores& db) {
                    const bool changed = action == "pause" ? db.admin.pause_workflow(workflow)
                                                           : db.admin.resume_workflow(workflow);
                    return ok({{"workflow_id", workflow},
                               {"paused", action == "pause"},
                               {"changed", changed}});
                },
                std::move(respond));
        }
        if (action == "cancel") {
            auto& metrics = services_.metrics;
            return on_lane(
                [workflow, &metrics](store::AdminStores& db) {
                    const auto cancelled = db.admin.cancel_workflow(workflow);
                    // Prometheus counters are thread-safe; the label cache is not, so use Add.
                    for (const auto& [ns, count] : cancelled.by_namespace) {
                        metrics.outcomes_total.Add({{"namespace", ns}, {"outcome", "cancelled"}})
                            .Increment(static_cast<double>(count));
                    }
                    return ok({{"workflow_id", workflow}, {"cancelled", cancelled.keys}});
                },
                std::move(respond));
        }
        return respond(
            not_found("unknown workflow action '" + action + "'; use pause, resume or cancel"));
    }
    if (route_is({"v1", "dead-letters"})) {
        if (!only("GET")) return;
        auto parsed = parse_dead_letter_query(target->query, kMaxListLimit);
        if (const auto* error = std::get_if<std::string>(&parsed))
            return respond(error_response(400, "invalid_request", *error));
        return on_lane(
            [query = std::get<DeadLetterQuery>(std::move(parsed))](store::AdminStores& db) {
                json letters = json::array();
                const auto found =
                    db.admin.list_dead_letters(query.filter, query.limit, query.after);
                for (const auto& l : found) {
                    letters.push_back({{"dispatch_key", l.dispatch_key},
                                       {"workflow_id", l.workflow_id},
                                       {"namespace", l.namespace_name},
                                       {"task_queue", l.task_queue},
                                       {"activity_type", l.activity_type},
                                       {"attempt", l.attempt},
                                       {"last_error", optional_json(l.last_error)},
                                       {"failed_at", optional_time(l.failed_at)}});
                }
                // A full page may have more after it: its last letter is where the next starts.
                json next = nullptr;
                if (static_cast<std::int32_t>(found.size()) == query.limit && !found.empty() &&
                    found.back().failed_at) {
                    next = encode_cursor({*found.back().failed_at, found.back().id});
                }
                return ok({{"dead_letters", letters}, {"next", next}});
            },
            std::move(respond));
    }
    if (route_is({"v1", "dead-letters", "requeue"}) || route_is({"v1", "dead-letters", "purge"})) {
        if (!only("POST")) return;
        auto parsed = parse_dead_letter_bulk(request.body);
        if (const auto* error = std::get_if<std::string>(&parsed))
            return respond(error_response(400, "invalid_request", *error));
        const bool requeue = seg[2] == "requeue";
        return on_lane(
            [bulk = std::get<DeadLetterBulk>(std::move(parsed)), requeue](store::AdminStores& db) {
                if (requeue)
                    return ok(
                        {{"requeued", db.admin.requeue_dead_letters(bulk.filter, bulk.limit)}});
                return ok({{"purged", db.admin.purge_dead_letters(bulk.filter, bulk.limit)}});
            },
            std::move(respond));
    }
    if (route_is({"v1", "dead-letters", "*", "requeue"})) {
        if (!only("POST")) return;
        return on_lane(
            [key = seg[2]](store::AdminStores& db) {
                return db.admin.requeue_dead_letter(key)
                           ? ok({{"dispatch_key", key}, {"requeued", true}})
                           : not_found("no dead letter with dispatch_key '" + key + "'");
            },
            std::move(respond));
    }
    if (route_is({"v1", "http-targets"}) || route_is({"v1", "http-targets", "*"})) {
        return http_targets(seg, request, std::move(respond));
    }
    if (route_is({"v1", "schedules"}) || route_is({"v1", "schedules", "*"})) {
        return schedules(seg, request, std::move(respond));
    }
    if (route_is({"v1", "namespaces"})) {
        if (only("GET")) list_namespaces(std::move(respond));
        return;
    }
    if (route_is({"v1", "namespaces", "*"})) {
        if (method == "PUT") return put_namespace(seg[2], request.body, std::move(respond));
        if (only("GET")) get_namespace(seg[2], std::move(respond));
        return;
    }
    respond(not_found("no such route: " + echoed));
}

void ApiRouter::stage(const ApiRequest& request, Respond respond) {
    auto parsed = parse_stage_request(request.body, kMaxRowsPerRequest);
    if (auto* error = std::get_if<RowError>(&parsed)) {
        json body = {{"error", {{"code", error->code}, {"message", error->message}}}};
        if (error->row) body["error"]["row"] = *error->row;
        return respond({400, "application/json", json_text(body)});
    }
    on_lane(
        [rows = std::get<std::vector<store::NewRow>>(std::move(parsed))](store::AdminStores& db) {
            try {
                const auto result = db.admin.append(rows);
                return ok({{"staged", result.staged}, {"duplicates", result.duplicates}});
            } catch (const store::ValidationError& error) {
                json body = {{"error", {{"code", "invalid_row"}, {"message", error.what()}}}};
                if (error.row_index()) body["error"]["row"] = *error.row_index();
                return ApiResponse{400, "application/json", json_text(body)};
            }
        },
        std::move(respond));
}

void ApiRouter::list_namespaces(Respond respond) {
    const auto default_quota = settings_.default_max_in_flight;
    on_lane(
        [default_quota](store::AdminStores& db) {
            const auto counts = db.admin.namespace_counts();
            std::map<std::string, store::NamespaceSettings> settings;
            for (auto& s : db.admin.list_namespaces()) settings.emplace(s.name, std::move(s));
            json list = json::array();
            for (const auto& c : counts) {
                const auto found = settings.find(c.namespace_name);
                const auto own = found == settings.end()
                                     ? std::nullopt
                                     : std::optional<store::NamespaceSettings>{found->second};
                list.push_back({{"namespace", c.namespace_name},
                                {"settings", namespace_json(c.namespace_name, own, default_quota)},
                                {"pending", c.pending},
                                {"claimed", c.claimed},
                                {"dead_letters", c.dead_letters},
                                {"finished_last_minute",
                                 {{"done", c.done_last_minute},
                                  {"failed", c.failed_last_minute},
                                  {"cancelled", c.cancelled_last_minute}}}});
            }
            return ok({{"namespaces", list}});
        },
        std::move(respond));
}

void ApiRouter::put_namespace(const std::string& name, const std::string& body, Respond respond) {
    auto parsed = parse_namespace_request(name, body);
    if (auto* error = std::get_if<RowError>(&parsed)) {
        return respond(error_response(400, error->code, error->message));
    }
    auto settings = std::get<store::NamespaceSettings>(std::move(parsed));
    auto* cache = &services_.engines.primary().namespaces();
    const auto default_quota = settings_.default_max_in_flight;
    on_lane(
        [settings, default_quota](store::AdminStores& db) {
            db.admin.put_namespace(settings);
            return ok(namespace_json(settings.name, db.admin.get_namespace(settings.name),
                                     default_quota));
        },
        [respond = std::move(respond), cache](ApiResponse response) {
            // Take the change here at once; other nodes see it within their cache TTL.
            if (response.status == 200) cache->refresh_now();
            respond(std::move(response));
        });
}

void ApiRouter::get_namespace(const std::string& name, Respond respond) {
    const auto default_quota = settings_.default_max_in_flight;
    on_lane(
        [name, default_quota](store::AdminStores& db) {
            return ok(namespace_json(name, db.admin.get_namespace(name), default_quota));
        },
        std::move(respond));
}

}  // namespace outboxd::http
