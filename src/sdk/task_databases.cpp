#include "task_databases.hpp"

#include <optional>

#include <nlohmann/json.hpp>

#include "outboxd/sdk/worker_client.hpp"

namespace outboxd::sdk::detail {
namespace {

using nlohmann::json;

// Walks a frame once, keeping only the "database" strings of the frame object (depth 1) and
// of the objects of its top-level "frames" array (depth 3): a task's input, however it
// nests, is never mistaken for its frame.
class DatabaseScan final : public nlohmann::json_sax<json> {
public:
    bool null() override { return true; }
    bool boolean(bool /*value*/) override { return true; }
    bool number_integer(number_integer_t /*value*/) override { return true; }
    bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
    bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
    bool binary(binary_t& /*value*/) override { return true; }

    bool string(string_t& text) override {
        if (depth_ == kFrameDepth) {
            if (frame_key_ == "type") batch_ = text == "batch";
            if (frame_key_ == "database" && !text.empty()) frame_database_ = text;
        } else if (depth_ == kMemberDepth && in_frames_ && member_key_ == "database" &&
                   !text.empty()) {
            members_.back() = text;
        }
        return true;
    }

    bool key(string_t& name) override {
        if (depth_ == kFrameDepth) frame_key_ = name;
        if (depth_ == kMemberDepth && in_frames_) member_key_ = name;
        return true;
    }

    bool start_object(std::size_t /*elements*/) override {
        ++depth_;
        if (depth_ == kMemberDepth && in_frames_) {
            members_.emplace_back(kDefaultDatabase);
            member_key_.clear();
        }
        return true;
    }

    bool end_object() override {
        --depth_;
        return true;
    }

    bool start_array(std::size_t /*elements*/) override {
        ++depth_;
        if (depth_ == kFrameDepth + 1 && frame_key_ == "frames") in_frames_ = true;
        return true;
    }

    bool end_array() override {
        if (depth_ == kFrameDepth + 1) in_frames_ = false;
        --depth_;
        return true;
    }

    bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                     const nlohmann::detail::exception& /*error*/) override {
        return false;
    }

    [[nodiscard]] std::vector<std::string> databases(std::size_t messages) && {
        if (batch_ && members_.size() == messages) return std::move(members_);
        return std::vector<std::string>(
            messages, batch_ ? std::string{kDefaultDatabase}
                             : frame_database_.value_or(std::string{kDefaultDatabase}));
    }

private:
    static constexpr int kFrameDepth = 1;   // the frame object
    static constexpr int kMemberDepth = 3;  // a message in the frame's "frames" array

    int depth_ = 0;
    bool batch_ = false;
    bool in_frames_ = false;
    std::string frame_key_;
    std::string member_key_;
    std::optional<std::string> frame_database_;
    std::vector<std::string> members_;
};

}  // namespace

std::vector<std::string> message_databases(std::string_view frame, std::size_t messages) {
    // Nodes from before several databases never name one: no walk for their frames.
    if (frame.find("\"database\"") == std::string_view::npos) {
        return std::vector<std::string>(messages, std::string{kDefaultDatabase});
    }
    DatabaseScan scan;
    if (!json::sax_parse(frame.begin(), frame.end(), &scan)) {
        return std::vector<std::string>(messages, std::string{kDefaultDatabase});
    }
    return std::move(scan).databases(messages);
}

}  // namespace outboxd::sdk::detail
