#include "api_context.hpp"

#include <memory>

#include <spdlog/spdlog.h>

#include "outboxd/store/store_error.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::http {

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
