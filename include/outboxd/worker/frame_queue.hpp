#pragma once

// Frames waiting to be written on one WebSocket connection, oldest first. While a write is
// in flight, frames pile up here; the next write takes all of them at once, as one batch
// frame, when the peer said it reads batches. One write (one send) then carries what would
// have been many, and nothing waits that would not have waited anyway.

#include <cstddef>
#include <deque>
#include <string>

namespace outboxd::worker::protocol {

class FrameQueue {
public:
    void push(std::string frame) { frames_.push_back(std::move(frame)); }
    void clear() { frames_.clear(); }
    [[nodiscard]] bool empty() const { return frames_.empty(); }
    [[nodiscard]] std::size_t size() const { return frames_.size(); }

    // Removes and returns the text of the next write: the oldest frame alone, or, with
    // `batch`, as many of the oldest frames as fit in `max_bytes` joined as one batch frame
    // (a frame too large to share a batch goes alone). Not empty() first.
    [[nodiscard]] std::string take(bool batch, std::size_t max_bytes);

private:
    std::deque<std::string> frames_;
};

}  // namespace outboxd::worker::protocol
