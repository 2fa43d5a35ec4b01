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
    // broken result, and the task would only time out. Fail it visibly instead.
    if (!plain &&
        std::holds_alternative<protocol::ProtocolError>(protocol::parse_worker_message(frame))) {
        spdlog::error("worker client: task {} completed with a result that is not valid JSON",
                      state_->task_id());
        frame = protocol::encode(protocol::Fail{
            state_->task_id(), "worker produced a result that is not valid JSON", false});
        return deliver(state_, std::move(frame), detail::Outcome::failed);
    }
    deliver(state_, std::move(frame), detail::Outcome::completed);
}

void Responder::fail(std::string error, bool retryable) {
    if (!state_ || !state_->claim()) return;
    deliver(state_,
            protocol::encode(protocol::Fail{state_->task_id(), std::move(error), retryable}),
            detail::Outcome::failed);
}

}  // namespace outboxd::sdk
