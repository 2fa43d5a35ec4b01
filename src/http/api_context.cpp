#include "api_context.hpp"

#include <array>
#include <memory>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::http {
namespace {

// Members of a body that hold secrets: never recorded.
constexpr std::array<std::string_view, 4> kSecretMembers{"signing_secret", "secret", "token",
                                                         "password"};

// `body` (a JSON text the route accepted) with its secrets taken out: secret members and
// header values become "[redacted]".
nlohmann::json redacted(const std::string& body) {
    if (body.empty()) return nullptr;
    auto parsed = nlohmann::json::parse(body, nullptr, false);
    if (parsed.is_discarded()) return nullptr;
    if (!parsed.is_object()) return parsed;
    for (const auto member : kSecretMembers) {
        if (const auto it = parsed.find(member); it != parsed.end() && !it->is_null()) {
            *it = "[redacted]";
        }
    }
    if (const auto headers = parsed.find("headers"); headers != parsed.end()) {
        if (headers->is_object()) {
            for (auto& [name, value] : headers->items()) value = "[redacted]";
        }
    }
    return parsed;
}

}  // namespace

void ApiContext::on_lane(Job job, Respond respond) const {
    on_lane(std::move(job), nullptr, std::move(respond));
}

void ApiContext::on_lane(Job job, Finish finish, Respond respond) const {
    // Shared with the job, so that a request the full lane refuses is still answered; only
    // ever called, and released, on the loop thread.
    auto answer = std::make_shared<Respond>(std::move(respond));
    auto* faults = &services_.metrics.faults_total;
    const bool queued = engine().admin_lane().call(
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
        [answer, finish = std::move(finish)](store::LaneResult<ApiResponse> done) {
            if (finish) return finish(std::move(done.value), std::move(*answer));
            (*answer)(std::move(done.value));
        });
    if (!queued) {
        (*answer)(error_response(503, "busy",
                                 "too many API requests are waiting for the database; try again"));
    }
}

}  // namespace outboxd::http

namespace outboxd::http {

void ApiContext::change(const RouteRequest& r, std::optional<std::string> ns, Job job,
                        Respond respond) const {
    change(r, std::move(ns), std::move(job), nullptr, std::move(respond));
}

void ApiContext::change(const RouteRequest& r, std::optional<std::string> ns, Job job,
                        Finish finish, Respond respond) const {
    store::AuditEntry entry;
    entry.credential_id = r.grant ? r.grant->credential_id : "anonymous";
    entry.method = r.request.method;
    entry.route = std::string{r.route};
    entry.namespace_name = std::move(ns);
    auto* faults = &services_.metrics.faults_total;
    on_lane(
        [job = std::move(job), entry = std::move(entry), params = r.params, body = r.request.body,
         faults](store::AdminStores& db) mutable {
            auto response = job(db);
            if (response.status >= 300) return response;
            try {
                entry.change_json = json_text({{"params", params}, {"body", redacted(body)}});
                db.access.record(entry);
            } catch (const std::exception& error) {
                // The change is made; what is lost is its record, which the log keeps.
                faults->Add({{"where", "audit"}}).Increment();
                spdlog::error(
                    "event=audit_record_failed credential={} route=\"{} {}\" error=\"{}\"",
                    util::log_safe(entry.credential_id), entry.method, util::log_safe(entry.route),
                    util::log_safe(error.what()));
            }
            return response;
        },
        std::move(finish), std::move(respond));
}

}  // namespace outboxd::http
