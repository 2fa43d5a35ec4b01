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
    // `alone`: never joined into a batch (a welcome: the peer reads it before batches).
    void push(std::string frame, bool alone = false) {
        bytes_ += frame.size();
        frames_.push_back({std::move(frame), alone});
    }
    void clear() {
        frames_.clear();
        bytes_ = 0;
    }
    [[nodiscard]] bool empty() const { return frames_.empty(); }
    [[nodiscard]] std::size_t size() const { return frames_.size(); }
    // The text bytes of every queued frame, the measure a queue bound needs: one frame may be
    // a megabyte.
    [[nodiscard]] std::size_t bytes() const { return bytes_; }

    // Removes and returns the text of the next write: the oldest frame alone, or, with
    // `batch`, as many of the oldest frames as fit in `max_bytes` joined as one batch frame
    // (a frame too large to share a batch, or pushed `alone`, goes alone). Not empty() first.
    [[nodiscard]] std::string take(bool batch, std::size_t max_bytes);

private:
    struct Entry {
        std::string text;
        bool alone = false;
    };
    std::deque<Entry> frames_;
    std::size_t bytes_ = 0;
};

}  // namespace outboxd::worker::protocol
