#pragma once

// The report's table for people: parts the scenarios write by key, printed in the order of
// a layout (scenario_list.cpp), each group of parts under its heading. Driver thread only.

#include <string>
#include <utility>
#include <vector>

namespace outboxd::bench {

// Parts printed together, under one heading.
struct TableGroup {
    std::string heading;  // whole lines above the group's parts; "" for none
    bool always = false;  // print the heading even when no part of the group was written
    std::vector<std::string> parts;
};

class ReportTable {
public:
    explicit ReportTable(std::vector<TableGroup> layout) : layout_(std::move(layout)) {}

    // Sets part `key` to `text` (whole lines, each ending in '\n'; empty: no part). Writing a
    // key again replaces its text, so that scenarios sharing a part may each write it.
    void put(const std::string& key, std::string text);

    // The layout's groups in order, then the parts it does not name, in the order first put.
    [[nodiscard]] std::string render() const;

private:
    [[nodiscard]] const std::string& text(const std::string& key) const;

    std::vector<TableGroup> layout_;
    std::vector<std::pair<std::string, std::string>> parts_;  // in the order first put
};

}  // namespace outboxd::bench
