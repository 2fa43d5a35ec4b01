#pragma once

// What a Responder shares with the client that issued it. The `answered` flag is the single
// arbiter of "each task is answered exactly once": the user's threads (complete, fail, a
// destroyed Responder) and the client's stop path (failing what is left) all claim it first.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "outboxd/sdk/worker_client.hpp"

namespace outboxd::sdk {

namespace detail {
class ClientCore;
}  // namespace detail

class Responder::State {
public:
    State(std::weak_ptr<detail::ClientCore> core, std::uint64_t connection_id, std::string task_id,
          std::size_t max_result_bytes = 0)
        : core_(std::move(core)),
          connection_id_(connection_id),
          task_id_(std::move(task_id)),
          max_result_bytes_(max_result_bytes) {}

    // True for exactly one caller, whoever it is.
    [[nodiscard]] bool claim() noexcept {
        return !answered_.exchange(true, std::memory_order_acq_rel);
    }
    [[nodiscard]] bool answered() const noexcept {
        return answered_.load(std::memory_order_acquire);
    }

    [[nodiscard]] const std::weak_ptr<detail::ClientCore>& core() const noexcept { return core_; }
    // The connection the task came on: its answer goes back there or nowhere.
    [[nodiscard]] std::uint64_t connection_id() const noexcept { return connection_id_; }
    [[nodiscard]] const std::string& task_id() const noexcept { return task_id_; }
    // The largest result the task's node keeps (its welcome); 0: not stated.
    [[nodiscard]] std::size_t max_result_bytes() const noexcept { return max_result_bytes_; }
    // Set when the node cancelled the task (a cancel frame); never cleared.
    void cancel() noexcept { cancelled_.store(true, std::memory_order_release); }
    [[nodiscard]] bool cancelled() const noexcept {
        return cancelled_.load(std::memory_order_acquire);
    }

private:
    std::weak_ptr<detail::ClientCore> core_;
    std::uint64_t connection_id_;
    std::string task_id_;
    std::size_t max_result_bytes_ = 0;
    std::atomic<bool> answered_{false};
    std::atomic<bool> cancelled_{false};
};

}  // namespace outboxd::sdk
