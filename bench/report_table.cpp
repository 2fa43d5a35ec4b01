#include "report_table.hpp"

#include <algorithm>
#include <set>

namespace outboxd::bench {

void ReportTable::put(const std::string& key, std::string text) {
    const auto part = std::find_if(parts_.begin(), parts_.end(),
                                   [&key](const auto& entry) { return entry.first == key; });
    if (part == parts_.end()) {
        parts_.emplace_back(key, std::move(text));
    } else {
        part->second = std::move(text);
    }
}

const std::string& ReportTable::text(const std::string& key) const {
    static const std::string none;
    const auto part = std::find_if(parts_.begin(), parts_.end(),
                                   [&key](const auto& entry) { return entry.first == key; });
    return part == parts_.end() ? none : part->second;
}

std::string ReportTable::render() const {
    std::string out;
    std::set<std::string> placed;
    for (const auto& group : layout_) {
        std::string body;
        for (const auto& key : group.parts) {
            body += text(key);
            placed.insert(key);
        }
        if (group.always || !body.empty()) out += group.heading;
        out += body;
    }
    for (const auto& [key, lines] : parts_) {
        if (!placed.contains(key)) out += lines;
    }
    return out;
}

}  // namespace outboxd::bench
