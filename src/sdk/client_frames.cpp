// ClientCore, part two: what the client does with each frame a node sends, and with each
// answer a Responder hands back. Network thread only.

#include <algorithm>
#include <exception>
#include <type_traits>
#include <variant>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "client_core.hpp"
#include "cluster_plan.hpp"

namespace outboxd::sdk::detail {
namespace {

namespace protocol = worker::protocol;

}  // namespace

void ClientCore::on_received(std::uint64_t connection_id, std::string_view text) {
    NodeLink* link = link_of(connection_id);
    // Frames on a connection being closed for a node that left the cluster: ignored, its
    // tasks are re-armed by the node when the connection goes.
    if (!link) return;
    auto parsed = protocol::parse_node_frame(text);
    if (const auto* error = std::get_if<protocol::ProtocolError>(&parsed)) {
        count([](WorkerStats& s) { ++s.frames_invalid; });
        spdlog::warn("worker client: unusable frame from {}: {}: {}", link->url, error->code,
                     error->message);
        return;
    }
    auto& messages = std::get<std::vector<protocol::NodeMessage>>(parsed);
    for (auto& message : messages) {
        // A message may end the link (a cluster list without this node): the rest is moot.
        link = link_of(connection_id);
        if (!link) return;
        std::visit(
            [this, link](auto& m) {
                using Message = std::decay_t<decltype(m)>;
                if constexpr (std::is_same_v<Message, protocol::Welcome>) {
                    on_welcome(*link, m);
                } else if constexpr (std::is_same_v<Message, protocol::Task>) {
                    on_task(*link, std::move(m));
                } else if constexpr (std::is_same_v<Message, protocol::Cluster>) {
                    on_cluster(m.nodes);
                } else if constexpr (std::is_same_v<Message, protocol::Drain>) {
                    on_drain(*link);
                } else if constexpr (std::is_same_v<Message, protocol::Cancel>) {
                    on_cancel(*link, m);
                } else {
                    on_error(*link, m);
                }
            },
            message);
    }
}

void ClientCore::on_welcome(NodeLink& link, const protocol::Welcome& welcome) {
    spdlog::info("worker client: {} is node {} (session {})", link.url, welcome.node_id,
                 welcome.session_id);
    link.node_id = welcome.node_id;
    link.max_result_bytes = welcome.max_result_bytes;
    // One node, one link: a seed that names a node differently from the URL it advertises
    // may have been joined by a learned link to the same node while it was reconnecting.
    // The seed stays; the learned link goes.
    std::vector<std::string> duplicates;
    bool duplicate_of_seed = false;
    for (const auto& other : links_) {
        if (other.get() == &link || other->node_id != welcome.node_id) continue;
        if (link.seed && !other->seed) duplicates.push_back(other->url);
        if (!link.seed && other->seed &&
            (other->phase == NodeLink::Phase::open || other->phase == NodeLink::Phase::draining)) {
            duplicate_of_seed = true;
        }
    }
    for (const auto& url : duplicates) remove_link(url);
    if (duplicate_of_seed) {
        // Not from inside this link's own frame handler: once it is done.
        boost::asio::post(ioc_, [this, url = link.url] {
            remove_link(url);
            publish();
        });
        return;
    }
    if (!duplicates.empty()) publish();
    // Reset only once the node accepted us: a node that upgrades then refuses (bad token,
    // draining) must keep backing off.
    link.backoff.reset();
    link.failures = 0;
    if (welcome.batch && options_.batch_frames) {
        if (const auto it = connections_.find(link.connection_id); it != connections_.end()) {
            it->second->batch_writes(protocol::batch_bytes_for(welcome.max_frame_bytes));
        }
    }
    on_cluster(welcome.cluster);
}

void ClientCore::on_task(NodeLink& link, const Task& task) {
    count([](WorkerStats& s) { ++s.tasks_received; });
    auto state = std::make_shared<Responder::State>(weak_from_this(), link.connection_id,
                                                    task.task_id, link.max_result_bytes);
    if (stopping_) {
        // Sent before our credit 0 arrived: hand it straight back.
        (void)state->claim();
        send(link, protocol::encode(protocol::Fail{task.task_id, "worker stopping", true}));
        count([](WorkerStats& s) { ++s.tasks_failed; });
        return;
    }
    ledger_.received(link.connection_id, CreditLedger::Clock::now());
    link.in_flight[task.task_id] = state;
    publish();
    try {
        handler_(task, Responder{std::move(state)});
    } catch (const std::exception& error) {
        // The Responder was destroyed unanswered on the way out, which failed the task.
        spdlog::error("worker client: handler threw on task {}: {}", task.task_id, error.what());
    } catch (...) {
        spdlog::error("worker client: handler threw on task {}", task.task_id);
    }
}

void ClientCore::on_cluster(const std::vector<protocol::NodeInfo>& nodes) {
    if (!options_.follow_cluster || stopping_) return;
    std::vector<KnownNode> known;
    known.reserve(links_.size());
    for (const auto& link : links_) {
        const bool connected =
            link->phase == NodeLink::Phase::open || link->phase == NodeLink::Phase::draining;
        known.push_back({link->url, link->node_id, link->seed, connected});
    }
    const auto plan = plan_cluster(known, nodes);
    for (const auto& url : plan.drop) remove_link(url);
    for (const auto& info : plan.connect) {
        if (NodeLink* link = add_link(info.url, /*seed=*/false)) {
            spdlog::info("worker client: learned node {} at {}", info.node_id, info.url);
            link->node_id = info.node_id;
            connect(*link);
        }
    }
    if (!plan.drop.empty()) publish();
}

void ClientCore::on_drain(NodeLink& link) {
    if (link.phase != NodeLink::Phase::open) return;
    spdlog::info("worker client: {} is draining; {} task(s) of it in flight", link.url,
                 link.in_flight.size());
    link.phase = NodeLink::Phase::draining;
    apply_credit(ledger_.drain(link.connection_id, CreditLedger::Clock::now()));
    publish();
}

void ClientCore::on_error(const NodeLink& link, const protocol::Error& error) {
    count([](WorkerStats& s) { ++s.errors_received; });
    spdlog::warn("worker client: {} reported {}: {}", link.url, error.code, error.message);
}

void ClientCore::apply_credit(const CreditLedger::Frames& frames) {
    if (stopping_) return;
    for (const auto& frame : frames) {
        NodeLink* link = link_of(frame.connection);
        if (!link) continue;
        if (frame.hello) {
            protocol::Hello hello;
            hello.worker_id = options_.worker_id;
            hello.namespaces = options_.namespaces;
            hello.task_queue = options_.task_queue;
            hello.node = options_.node;
            hello.activity_types = options_.activity_types;
            hello.max_in_flight = frame.credit;
            hello.batch = options_.batch_frames;
            if (hello.batch) hello.max_frame_bytes = options_.max_frame_bytes;
            send(*link, protocol::encode(hello));
        } else {
            spdlog::debug("worker client: credit for {}: {}", link->url, frame.credit);
            send(*link, protocol::encode(protocol::Credit{frame.credit}));
        }
    }
    arm_settle();
}

void ClientCore::arm_settle() {
    // One timer, for the earliest lowered credit the ledger will release.
    const auto due = ledger_.settle_due();
    if (!due || (settle_at_ && *settle_at_ <= *due)) return;
    settle_at_ = due;
    settle_timer_.expires_at(*due);
    settle_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;  // replaced by an earlier one, or stopping
        settle_at_.reset();
        apply_credit(ledger_.settle(CreditLedger::Clock::now()));
    });
}

void ClientCore::on_cancel(NodeLink& link, const protocol::Cancel& cancel) {
    const auto it = link.in_flight.find(cancel.task_id);
    if (it == link.in_flight.end()) return;  // answered already
    spdlog::info("worker client: node {} cancelled task {}: {}", link.url, cancel.task_id,
                 cancel.reason);
    it->second->cancel();
    count([](WorkerStats& s) { ++s.tasks_cancelled; });
}

void ClientCore::deliver_answer(const Responder::State& state, std::string frame, Outcome outcome) {
    NodeLink* link = link_of(state.connection_id());
    const auto it =
        link ? link->in_flight.find(state.task_id()) : decltype(link->in_flight)::iterator{};
    if (!link || it == link->in_flight.end() || it->second.get() != &state) {
        // The connection it came on is gone; the node re-arms the task itself.
        count([](WorkerStats& s) { ++s.answers_dropped; });
        spdlog::debug("worker client: dropping the answer to task {}: its connection is gone",
                      state.task_id());
        return;
    }
    link->in_flight.erase(it);
    send(*link, std::move(frame));
    // After the answer: a credit frame it makes room for goes out behind it.
    apply_credit(ledger_.answered(link->connection_id, CreditLedger::Clock::now()));
    count([outcome](WorkerStats& s) {
        ++(outcome == Outcome::completed ? s.tasks_completed : s.tasks_failed);
    });
    publish();
    if (stop_finished_) return close_when_settled();
    if (stopping_ && in_flight_count() == 0) grace_timer_.cancel();
}

}  // namespace outboxd::sdk::detail
