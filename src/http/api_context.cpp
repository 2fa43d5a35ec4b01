#include "api_context.hpp"

#include <array>
#include <memory>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "database_param.hpp"
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

engine::OutboxEngine& ApiContext::control() const {
    auto* found = settings_.control_database.empty()
                      ? nullptr
                      : services_.engines.find(settings_.control_database);
    return found ? *found : services_.engines.primary();
}

std::variant<std::vector<engine::OutboxEngine*>, ApiResponse> ApiContext::databases(
    Databases scope, const ParsedTarget& target) const {
    return choose_databases(scope, target, services_.engines, settings_.control_database);
}

ApiResponse ApiContext::failure(const std::string& database, metrics::NodeMetrics& metrics) {
    try {
        throw;
    } catch (const store::ValidationError& error) {
        // The data: the message names what is wrong, for the client to fix.
        return error_response(400, "invalid_request", error.what());
    } catch (const store::UnavailableError& error) {
        // Details (hosts, SQL) go to the log, not to the client.
        spdlog::warn("event=api_database_unavailable database={} error=\"{}\"", database,
                     util::log_safe(error.what()));
        return error_response(503, "database_unavailable",
                              "the database '" + database + "' cannot be reached; try again");
    } catch (const store::ConflictError& error) {
        spdlog::info("event=api_conflict database={} error=\"{}\"", database,
                     util::log_safe(error.what()));
        return error_response(503, "conflict",
                              "the database was busy (a conflict or a timeout); try again");
    } catch (const std::exception& error) {
        metrics.faults_total.Add({{"where", "api"}}).Increment();  // Family::Add is thread-safe
        spdlog::error("event=fault where=api database={} error=\"{}\"", database,
                      util::log_safe(error.what()));
    } catch (...) {
        metrics.faults_total.Add({{"where", "api"}}).Increment();
        spdlog::error("event=fault where=api database={} error=\"not a std::exception\"", database);
    }
    return error_response(500, "internal", "the request failed unexpectedly");
}

ApiResponse ApiContext::busy() {
    return error_response(503, "busy",
                          "too many API requests are waiting for the database; try again");
}

void ApiContext::on_lane(engine::OutboxEngine& database, Job job, Respond respond) const {
    on_lane(database, std::move(job), nullptr, std::move(respond));
}

void ApiContext::on_lane(engine::OutboxEngine& database, Job job, Finish finish,
                         Respond respond) const {
    change_or_read(database, std::move(job), std::nullopt, std::move(finish), std::move(respond));
}

}  // namespace outboxd::http

namespace outboxd::http {

ApiContext::Audit ApiContext::audit_of(const RouteRequest& r, std::optional<std::string> ns) {
    Audit audit;
    audit.entry.credential_id = r.grant ? r.grant->credential_id : "anonymous";
    audit.entry.method = r.request.method;
    audit.entry.route = std::string{r.route};
    audit.entry.namespace_name = std::move(ns);
    audit.params = r.params;
    audit.body = r.request.body;
    return audit;
}

void ApiContext::write(store::AdminStores& db, const Audit& audit, metrics::NodeMetrics& metrics) {
    auto entry = audit.entry;
    try {
        entry.change_json = json_text({{"params", audit.params}, {"body", redacted(audit.body)}});
        db.access.record(entry);
    } catch (const std::exception& error) {
        // The change is made; what is lost is its record, which the log keeps.
        metrics.faults_total.Add({{"where", "audit"}}).Increment();
        spdlog::error(
            "event=audit_record_failed credential={} route=\"{} {}\" database={} error=\"{}\"",
            util::log_safe(entry.credential_id), entry.method, util::log_safe(entry.route),
            entry.database.value_or("-"), util::log_safe(error.what()));
    }
}

void ApiContext::record(Audit audit, std::function<void()> then) const {
    // Shared with the job, so that `then` runs even when the full lane refuses the record.
    auto next = std::make_shared<std::function<void()>>(std::move(then));
    auto* metrics = &services_.metrics;
    const auto route = audit.entry.method + " " + audit.entry.route;
    const auto database = audit.entry.database.value_or("-");
    const bool queued = control().admin_lane().call(
        loop_, lifetime_.watch(),
        [audit = std::move(audit), metrics](store::AdminStores& db) { write(db, audit, *metrics); },
        [next](const store::LaneResult<std::monostate>&) { (*next)(); });
    if (!queued) {
        services_.metrics.faults_total.Add({{"where", "audit"}}).Increment();
        spdlog::error(
            "event=audit_record_failed route=\"{}\" database={} error=\"the control "
            "database's API lane is full\"",
            util::log_safe(route), database);
        (*next)();
    }
}

void ApiContext::change(const RouteRequest& r, engine::OutboxEngine& database,
                        std::optional<std::string> ns, Job job, Respond respond) const {
    change(r, database, std::move(ns), std::move(job), nullptr, std::move(respond));
}

void ApiContext::change(const RouteRequest& r, engine::OutboxEngine& database,
                        std::optional<std::string> ns, Job job, Finish finish,
                        Respond respond) const {
    auto audit = audit_of(r, std::move(ns));
    audit.entry.database = database.name();
    change_or_read(database, std::move(job), std::move(audit), std::move(finish),
                   std::move(respond));
}

void ApiContext::change_or_read(engine::OutboxEngine& database, Job job, std::optional<Audit> audit,
                                Finish finish, Respond respond) const {
    run<ApiResponse>(database, std::move(job), std::move(audit),
                     [finish = std::move(finish),
                      respond = std::move(respond)](Result<ApiResponse> outcome) mutable {
                         auto answer = outcome.index() == 0 ? std::get<0>(std::move(outcome))
                                                            : std::get<1>(std::move(outcome));
                         if (finish) return finish(std::move(answer), std::move(respond));
                         respond(std::move(answer));
                     });
}

}  // namespace outboxd::http
