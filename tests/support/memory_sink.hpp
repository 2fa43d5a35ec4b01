#pragma once

// A sink of the tests' own (a third kind beside WebSocket workers and HTTP push targets):
// it keeps what dispatch sends it as the frames a WebSocket session would write, and its
// test answers through the SinkPort like any sink. Nothing else in the tree knows it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "outboxd/sinks/sink.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::test {

class MemorySink final : public sinks::Sink {
public:
    // `max_frame_bytes`: the largest frame it reads (0: not stated).
    explicit MemorySink(std::size_t max_frame_bytes = 0) : max_frame_bytes_(max_frame_bytes) {}

    std::optional<std::string> send_task(const sinks::Task& task) override {
        auto encoded = worker::protocol::encode_task_for(task, max_frame_bytes_);
        if (!encoded.refused.empty()) return encoded.refused;
        frames.push_back(nlohmann::json::parse(encoded.frame));
        return std::nullopt;
    }
    void send_cancel(const std::string& task_id, std::string_view reason) override {
        frames.push_back(
            {{"type", "cancel"}, {"task_id", task_id}, {"reason", std::string{reason}}});
    }
    void close(std::string_view reason) override { closed_reason = std::string{reason}; }

    // Task frames received so far, in order.
    [[nodiscard]] std::vector<nlohmann::json> tasks() const {
        std::vector<nlohmann::json> out;
        for (const auto& f : frames) {
            if (f["type"] == "task") out.push_back(f);
        }
        return out;
    }

    std::vector<nlohmann::json> frames;
    std::optional<std::string> closed_reason;

private:
    std::size_t max_frame_bytes_;
};

}  // namespace outboxd::test
