#pragma once

// A kind of destination (README, "Targets"): HTTP push, NATS JetStream, AMQP. Every target is
// stored the same way (store::TargetSettings: a route, a bound, a URL, the kind's options and
// credentials) and served the same way (Targets, targets.hpp: read every refresh, attached
// through the SinkPort with its node's share of max_in_flight); what differs is said here, by
// the kind: the rules its settings must satisfy and the channel that carries a task there and
// answers for it. Dispatch sees a channel as any other Sink. Adding a kind is a
// DestinationKind in its own files and one line in the list of kinds (kinds.cpp).
//
// Thread affinity: the node's loop thread (a channel may run its client on threads of its own,
// and answers on the loop).

#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "outboxd/metrics/node_metrics.hpp"
#include "outboxd/sinks/http_push/target_check.hpp"
#include "outboxd/sinks/sink.hpp"
#include "outboxd/store/target.hpp"

namespace outboxd::sinks::targets {

using http_push::FieldProblem;
using http_push::HostPolicy;

// Where a channel's answers go: dispatch's complete / fail for the target's sink.
struct Answers {
    // `result`: JSON text kept as the task's result, if the destination gave one.
    std::function<void(const std::string& task_id, std::optional<std::string> result)> done;
    std::function<void(const std::string& task_id, std::string error, bool retryable,
                       std::chrono::milliseconds min_delay)>
        failed;
};

// One target on one node: takes the tasks dispatch hands it (at most its credit) and answers
// each exactly once, unless it is closed first (close answers what it holds as retried
// failures).
class Channel : public Sink {
public:
    [[nodiscard]] virtual std::size_t in_flight() const = 0;
    // What happened since the last call: the latest error, and whether anything succeeded.
    [[nodiscard]] virtual store::TargetReport take_report() = 0;
    [[nodiscard]] virtual std::optional<std::string> last_error() const = 0;
    // Whether it holds a working connection (HTTP opens one per request: always true).
    [[nodiscard]] virtual bool connected() const { return true; }
};

// What a kind's channel may use of its node.
struct ChannelContext {
    boost::asio::any_io_executor loop;
    const HostPolicy& policy;  // outlives the channel
    metrics::NodeMetrics& metrics;
    std::string database;  // the target's database, in metric labels and headers
    Answers answers;
    std::size_t max_response_bytes = 0;  // what a destination's answer may hold
    std::size_t max_result_bytes = 0;    // what of it may be kept as the task's result
    std::function<std::time_t()> wall_clock;
    // The channel can take tasks now (true), or cannot until it says so again (false: its
    // broker is unreachable). Dispatch claims no rows for it meanwhile, so that they wait
    // pending instead of spending attempts. A channel starts ready unless it says otherwise.
    std::function<void(bool ready)> ready;
};

// A field of the API body that is one of the kind's options (store::TargetSettings::options).
struct OptionSpec {
    std::string_view name;
    bool boolean = false;  // true/false in the API body, "true"/"false" stored
};

class DestinationKind {
public:
    virtual ~DestinationKind() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;  // "http", "nats", "amqp"
    // The body fields that are its options and its credentials (secrets, never shown).
    [[nodiscard]] virtual std::span<const OptionSpec> options() const = 0;
    [[nodiscard]] virtual std::span<const std::string_view> credentials() const = 0;
    // What the message's body is when the target does not say: "task" or "input".
    [[nodiscard]] virtual std::string_view default_body() const = 0;
    // A target as given to the API made ready to store: e.g. a password written in the URL
    // moved to the credentials, so that the URL shown never holds it.
    virtual void normalize(store::TargetSettings& target) const { (void)target; }
    // The kind's own rules (its URL, options, credentials and where it may point); the
    // common ones (name, route, bounds) are checked before. Pure: no name is resolved.
    [[nodiscard]] virtual std::optional<FieldProblem> check(const store::TargetSettings& target,
                                                            const HostPolicy& policy) const = 0;
    // The channel of a checked target; throws std::runtime_error saying why this node
    // cannot use it (an unreadable CA file, …).
    [[nodiscard]] virtual std::shared_ptr<Channel> open(const store::TargetSettings& target,
                                                        ChannelContext context) const = 0;
    // The URL as the API and logs show it: no password, no query.
    [[nodiscard]] virtual std::string shown_url(std::string_view url) const = 0;
};

// The kinds this build knows, and one by name (nullptr: unknown).
[[nodiscard]] std::span<const DestinationKind* const> kinds();
[[nodiscard]] const DestinationKind* find_kind(std::string_view name);

// Every rule a target must satisfy: the common ones, then its kind's.
[[nodiscard]] std::optional<FieldProblem> check_target(const store::TargetSettings& target,
                                                       const HostPolicy& policy);

// The body a target sends: "task" (the task's JSON) or "input" (the row's input as is).
[[nodiscard]] bool sends_whole_task(const store::TargetSettings& target);

}  // namespace outboxd::sinks::targets
