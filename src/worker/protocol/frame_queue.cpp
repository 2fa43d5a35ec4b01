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
    if (batch && !frames_.front().alone) {
        std::size_t bytes = kBatchEnvelopeBytes + frames_.front().text.size();
        while (count < frames_.size() && !frames_[count].alone &&
               bytes + frames_[count].text.size() + 1 <= max_bytes) {
            bytes += frames_[count].text.size() + 1;
            ++count;
        }
    }
    if (count == 1) {
        std::string frame = std::move(frames_.front().text);
        frames_.pop_front();
        bytes_ -= frame.size();
        return frame;
    }
    std::vector<std::string> members;
    members.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        bytes_ -= frames_[i].text.size();
        members.push_back(std::move(frames_[i].text));
    }
    frames_.erase(frames_.begin(), frames_.begin() + static_cast<long>(count));
    return encode_batch(members);
}

}  // namespace outboxd::worker::protocol
