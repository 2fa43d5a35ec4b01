#include "delivery_log.hpp"

#include <fstream>
#include <sstream>
#include <string_view>

namespace outboxd::chaos {

namespace {

struct Line {
    std::string_view kind;
    std::int64_t at_ms = 0;
    std::string_view task_id;
    std::string_view dispatch_key;
    std::int32_t attempt = 0;
};

// Splits off the next space-separated field of `rest`.
std::string_view next_field(std::string_view& rest) {
    const auto space = rest.find(' ');
    const auto field = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    return field;
}

bool parse_line(std::string_view text, Line& line) {
    line.kind = next_field(text);
    const auto at = next_field(text);
    line.task_id = next_field(text);
    if (line.kind.empty() || at.empty() || line.task_id.empty() || text.empty()) return false;
    try {
        line.at_ms = std::stoll(std::string{at});
        if (line.kind == "deliver") {
            // The key may hold spaces; the attempt is the last field.
            const auto space = text.rfind(' ');
            if (space == std::string_view::npos) return false;
            line.dispatch_key = text.substr(0, space);
            line.attempt = std::stoi(std::string{text.substr(space + 1)});
        } else {
            line.dispatch_key = text;
        }
    } catch (const std::exception&) {
        return false;
    }
    return line.kind == "deliver" || line.kind == "complete" || line.kind == "fail";
}

// Calls `f` for every complete line of `path`.
template <typename F>
void for_each_line(const std::string& path, F f) {
    std::ifstream in{path, std::ios::binary};
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\n', start);
        if (end == std::string::npos) break;  // a line cut short by kill -9
        f(std::string_view{text}.substr(start, end - start));
        start = end + 1;
    }
}

}  // namespace

void read_delivery_log(const std::string& path, std::uint32_t worker, DeliveryRecords& records) {
    for_each_line(path, [&](std::string_view text) {
        Line line;
        if (!parse_line(text, line)) {
            ++records.malformed;
            return;
        }
        if (line.kind == "deliver") {
            records.deliveries.push_back({line.at_ms, std::string{line.task_id},
                                          std::string{line.dispatch_key}, line.attempt, worker});
        } else if (line.kind == "complete") {
            records.completed.emplace(line.task_id);
        } else {
            ++records.failed;
        }
    });
}

std::size_t unanswered_deliveries(const std::string& path) {
    std::unordered_set<std::string> open;
    for_each_line(path, [&](std::string_view text) {
        Line line;
        if (!parse_line(text, line)) return;
        if (line.kind == "deliver") {
            open.emplace(line.task_id);
        } else {
            open.erase(std::string{line.task_id});
        }
    });
    return open.size();
}

}  // namespace outboxd::chaos
