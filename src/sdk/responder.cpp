#include <variant>

#include <spdlog/spdlog.h>

#include "client_core.hpp"
#include "outboxd/sdk/worker_client.hpp"
#include "responder_state.hpp"

namespace outboxd::sdk {
namespace {

namespace protocol = worker::protocol;

constexpr std::string_view kAbandoned = "abandoned by worker";

// Hands a claimed answer to the client, if the client still exists.
void deliver(const std::shared_ptr<Responder::State>& state, std::string frame,
             detail::Outcome outcome) {
    if (auto core = state->core().lock()) core->post_answer(state, std::move(frame), outcome);
}

}  // namespace

Responder::Responder(std::shared_ptr<State> state) : state_(std::move(state)) {}

Responder::Responder(Responder&&) noexcept = default;

Responder& Responder::operator=(Responder&& other) noexcept {
    if (this != &other) {
        if (state_ && !state_->answered()) fail(std::string{kAbandoned}, true);
        state_ = std::move(other.state_);
    }
    return *this;
}

Responder::~Responder() {
    if (state_ && !state_->answered()) fail(std::string{kAbandoned}, true);
}

void Responder::complete(std::string result_json) {
    if (!state_ || !state_->claim()) return;
    const bool plain = result_json.empty() || result_json == "null";
    auto frame = protocol::encode(protocol::Complete{state_->task_id(), std::move(result_json)});
    // The result is spliced into the frame verbatim; a node cannot parse a frame with a
    // broken result, nor keep one larger than its welcome says or holding \u0000, and the
    // task would only time out. Fail it visibly instead, as non-retryable.
    const auto refuse = [&](const std::string& why) {
        spdlog::error("worker client: task {} completed with a result that {}", state_->task_id(),
                      why);
        frame = protocol::encode(
            protocol::Fail{state_->task_id(), "worker produced a result that " + why, false});
        deliver(state_, std::move(frame), detail::Outcome::failed);
    };
    if (!plain) {
        const auto parsed = protocol::parse_worker_message(frame);
        if (std::holds_alternative<protocol::ProtocolError>(parsed)) {
            return refuse("is not valid JSON");
        }
        // As the node measures it: the compact text the frame's parse gives.
        const auto& kept = std::get<protocol::Complete>(std::get<protocol::WorkerMessage>(parsed));
        const auto limit = state_->max_result_bytes();
        if (limit > 0 && kept.result_json.size() > limit) {
            return refuse("is " + std::to_string(kept.result_json.size()) +
                          " bytes, more than the node keeps (" + std::to_string(limit) + ")");
        }
        if (util::json_text_has_nul(kept.result_json)) {
            return refuse("contains \\u0000, which the node cannot store");
        }
    }
    deliver(state_, std::move(frame), detail::Outcome::completed);
}

void Responder::fail(std::string error, bool retryable) {
    if (!state_ || !state_->claim()) return;
    deliver(state_,
            protocol::encode(protocol::Fail{state_->task_id(), std::move(error), retryable}),
            detail::Outcome::failed);
}

void Responder::heartbeat(std::optional<std::string> progress_json) {
    if (!state_ || state_->answered()) return;
    if (progress_json) {
        // As the node measures it: the compact text the frame's parse gives.
        const auto parsed = protocol::parse_worker_message(
            protocol::encode(protocol::Heartbeat{state_->task_id(), progress_json}));
        if (std::holds_alternative<protocol::ProtocolError>(parsed)) {
            spdlog::warn("worker client: heartbeat of task {} sent without its progress: {}",
                         state_->task_id(), std::get<protocol::ProtocolError>(parsed).message);
            progress_json.reset();
        } else {
            progress_json = std::get<protocol::Heartbeat>(std::get<protocol::WorkerMessage>(parsed))
                                .progress_json;
        }
    }
    if (auto core = state_->core().lock()) {
        core->post_frame(state_, protocol::encode(protocol::Heartbeat{state_->task_id(),
                                                                      std::move(progress_json)}));
    }
}

bool Responder::cancelled() const { return state_ && state_->cancelled(); }

}  // namespace outboxd::sdk
