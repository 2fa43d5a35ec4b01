#pragma once

// What the API's handlers share: the node's services and settings, and the one way a
// handler reaches a database — a job on that database's API lane whose store errors become
// 4xx/5xx answers here and only here — or every database a listing spans, one after the
// other (walk()). Changes are audited in the control database (README, "Security").
// Loop thread only.

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "api_types.hpp"
#include "outboxd/http/server.hpp"
#include "outboxd/util/lifetime.hpp"
#include "route_table.hpp"

namespace outboxd::http {

// Upper bounds of one request.
inline constexpr std::size_t kMaxRowsPerRequest = 10000;
inline constexpr std::int32_t kMaxListLimit = 1000;

class ApiContext {
public:
    using Job = std::function<ApiResponse(store::AdminStores&)>;
    // One database's part of an answer that spans several.
    template <typename Part>
    using PartJob = std::function<Part(store::AdminStores&)>;
    // Each database's name and part, in the order walked.
    template <typename Part>
    using Parts = std::vector<std::pair<std::string, Part>>;

    ApiContext(boost::asio::any_io_executor loop, NodeServices services, ServerSettings settings)
        : loop_(std::move(loop)), services_(std::move(services)), settings_(std::move(settings)) {}

    // The first database (the node's cluster view).
    [[nodiscard]] engine::OutboxEngine& engine() const { return services_.engines.primary(); }
    // The control database: credentials and the audit log.
    [[nodiscard]] engine::OutboxEngine& control() const;
    [[nodiscard]] const NodeServices& services() const { return services_; }
    [[nodiscard]] const ServerSettings& settings() const { return settings_; }
    // The databases a request to a route of `scope` acts on, or the answer that refuses its
    // ?database= (database_param.hpp).
    [[nodiscard]] std::variant<std::vector<engine::OutboxEngine*>, ApiResponse> databases(
        Databases scope, const ParsedTarget& target) const;

    // Runs `job` on `database`'s API lane and answers with what it returns; store errors
    // become 4xx/5xx; a full lane a 503.
    void on_lane(engine::OutboxEngine& database, Job job, Respond respond) const;
    // The same, but the answer goes to `finish` on the loop, which sends it through the
    // Respond it is given, when it will (after taking a change here at once, say).
    using Finish = std::function<void(ApiResponse, Respond)>;
    void on_lane(engine::OutboxEngine& database, Job job, Finish finish, Respond respond) const;

    // What the audit log records of a change through the API: the caller's credential id,
    // the method, the route, a namespace, and what changed (the route's parameters and its
    // body with every secret taken out, when recorded). The database is the one changed.
    struct Audit {
        store::AuditEntry entry;
        std::vector<std::string> params;
        std::string body;
    };
    [[nodiscard]] static Audit audit_of(const RouteRequest& r, std::optional<std::string> ns);

    // A change through the API: runs `job` on `database` as on_lane does and, when it
    // answers with a success, records it in the audit log before answering. In the control
    // database the record is written in the change's own lane job; in another, by a job on
    // the control database's lane right after the change succeeded (two databases, two
    // transactions: a change whose record cannot be written stands, logged and counted).
    void change(const RouteRequest& r, engine::OutboxEngine& database,
                std::optional<std::string> ns, Job job, Respond respond) const;
    void change(const RouteRequest& r, engine::OutboxEngine& database,
                std::optional<std::string> ns, Job job, Finish finish, Respond respond) const;

    // A listing or bulk change over several databases, walked in order, one lane job at a
    // time: `next` gives the job for a database from the parts so far (none: stop the walk,
    // as a bulk change that took its limit does), `combine` the answer from every part. The
    // first failure is the answer. With `audit`, each database's part is a change to it,
    // recorded as change() records one.
    template <typename Part>
    struct Walk {
        std::function<std::optional<PartJob<Part>>(const engine::OutboxEngine& database,
                                                   const Parts<Part>& so_far)>
            next;
        std::function<ApiResponse(Parts<Part>)> combine;
        std::optional<Audit> audit;
    };
    template <typename Part>
    void walk(std::vector<engine::OutboxEngine*> databases, Walk<Part> plan, Respond respond) const;

private:
    // What a job gave (index 0), or the answer that says why it failed (index 1).
    template <typename T>
    using Result = std::variant<T, ApiResponse>;

    template <typename T>
    static bool succeeded(const T& value) {
        if constexpr (std::is_same_v<T, ApiResponse>) {
            return value.status < 300;
        } else {
            return true;
        }
    }

    // Runs `job` on `database`'s lane, audits it as `audit` says (see change()), and gives
    // `done` the outcome on the loop.
    template <typename T>
    void run(engine::OutboxEngine& database, PartJob<T> job, std::optional<Audit> audit,
             std::function<void(Result<T>)> done) const;
    // The answer for what a lane job threw (the exception in flight), naming its database.
    // Any thread.
    [[nodiscard]] static ApiResponse failure(const std::string& database,
                                             metrics::NodeMetrics& metrics);
    [[nodiscard]] static ApiResponse busy();
    // Writes `audit` through `db` (the control database's stores); a failure is logged and
    // counted, never thrown: the change it records is made. Any lane thread.
    static void write(store::AdminStores& db, const Audit& audit, metrics::NodeMetrics& metrics);
    // Writes `audit` by a job on the control database's lane, then `then` on the loop.
    void record(Audit audit, std::function<void()> then) const;
    // on_lane() without `audit`, change() with it.
    void change_or_read(engine::OutboxEngine& database, Job job, std::optional<Audit> audit,
                        Finish finish, Respond respond) const;

    template <typename Part>
    struct WalkState {
        std::vector<engine::OutboxEngine*> databases;
        Walk<Part> plan;
        Respond respond;
        Parts<Part> parts;
        std::size_t at = 0;
    };
    template <typename Part>
    void step(std::shared_ptr<WalkState<Part>> state) const;

    boost::asio::any_io_executor loop_;
    NodeServices services_;
    ServerSettings settings_;
    util::Lifetime lifetime_;
};

template <typename T>
void ApiContext::run(engine::OutboxEngine& database, PartJob<T> job, std::optional<Audit> audit,
                     std::function<void(Result<T>)> done) const {
    // The record goes into the change's own job when the control database is the one
    // changed (nothing can come between them), else into a job of its own after it.
    std::optional<Audit> with_job;
    std::optional<Audit> after_job;
    (&database == &control() ? with_job : after_job) = std::move(audit);
    // Shared with the job, so that a request the full lane refuses is still answered; only
    // ever called, and released, on the loop thread.
    auto answer = std::make_shared<std::function<void(Result<T>)>>(std::move(done));
    auto* metrics = &services_.metrics;
    const bool queued = database.admin_lane().call(
        loop_, lifetime_.watch(),
        [job = std::move(job), audit = std::move(with_job), metrics,
         name = database.name()](store::AdminStores& db) -> Result<T> {
            try {
                auto value = job(db);
                if (audit && succeeded(value)) write(db, *audit, *metrics);
                return Result<T>{std::in_place_index<0>, std::move(value)};
            } catch (...) {
                return Result<T>{std::in_place_index<1>, failure(name, *metrics)};
            }
        },
        [this, answer, audit = std::move(after_job)](store::LaneResult<Result<T>> ran) mutable {
            const auto* value = std::get_if<0>(&ran.value);
            if (!audit || !value || !succeeded(*value)) return (*answer)(std::move(ran.value));
            record(std::move(*audit), [answer, outcome = std::move(ran.value)]() mutable {
                (*answer)(std::move(outcome));
            });
        });
    if (!queued) (*answer)(Result<T>{std::in_place_index<1>, busy()});
}

template <typename Part>
void ApiContext::walk(std::vector<engine::OutboxEngine*> databases, Walk<Part> plan,
                      Respond respond) const {
    step(std::make_shared<WalkState<Part>>(
        WalkState<Part>{std::move(databases), std::move(plan), std::move(respond), {}, 0}));
}

template <typename Part>
void ApiContext::step(std::shared_ptr<WalkState<Part>> state) const {
    auto job = state->at < state->databases.size()
                   ? state->plan.next(*state->databases[state->at], state->parts)
                   : std::nullopt;
    if (!job) return state->respond(state->plan.combine(std::move(state->parts)));
    auto& database = *state->databases[state->at];
    auto audit = state->plan.audit;
    if (audit) audit->entry.database = database.name();
    run<Part>(database, std::move(*job), std::move(audit), [this, state](Result<Part> result) {
        if (auto* refused = std::get_if<1>(&result)) {
            return state->respond(std::move(*refused));
        }
        auto& database = *state->databases[state->at];
        state->parts.emplace_back(database.name(), std::get<0>(std::move(result)));
        ++state->at;
        step(std::move(state));
    });
}

}  // namespace outboxd::http
