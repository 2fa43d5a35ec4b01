#include "outboxd/worker/frame_queue.hpp"

#include <vector>

#include "outboxd/worker/protocol.hpp"

namespace outboxd::worker::protocol {
namespace {

// What a batch adds around its members: {"type":"batch","frames":[…]} and a comma each.
constexpr std::size_t kBatchEnvelopeBytes = 28;

}  // namespace

std::string FrameQueue::take(bool batch, std::size_t max_bytes) {
    std::size_t count = 1;
    if (batch) {
        std::size_t bytes = kBatchEnvelopeBytes + frames_.front().size();
        while (count < frames_.size() && bytes + frames_[count].size() + 1 <= max_bytes) {
            bytes += frames_[count].size() + 1;
            ++count;
        }
    }
    if (count == 1) {
        std::string frame = std::move(frames_.front());
        frames_.pop_front();
        return frame;
    }
    std::vector<std::string> members(std::make_move_iterator(frames_.begin()),
                                     std::make_move_iterator(frames_.begin() + static_cast<long>(count)));
    frames_.erase(frames_.begin(), frames_.begin() + static_cast<long>(count));
    return encode_batch(members);
}

}  // namespace outboxd::worker::protocol
