#pragma once

// Formatting shared by the report's sections (bench_report.cpp, routes_report.cpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace outboxd::bench {

// printf into a std::string; one table line at most (512 bytes).
inline std::string strf(const char* pattern, auto... values) {
    char buffer[512];
    std::snprintf(buffer, sizeof buffer, pattern, values...);
    return buffer;
}

// The run with the median rows_per_s() (the lower one for an even count); nullptr if none.
template <typename Run>
const Run* median_run(const std::vector<Run>& runs) {
    if (runs.empty()) return nullptr;
    std::vector<const Run*> sorted;
    for (const auto& run : runs) sorted.push_back(&run);
    std::sort(sorted.begin(), sorted.end(),
              [](const Run* a, const Run* b) { return a->rows_per_s() < b->rows_per_s(); });
    return sorted[(sorted.size() - 1) / 2];
}

inline std::string verdict(bool met) { return met ? "met" : "MISSED"; }

// JSON numbers: rates as integers, everything else to 4 decimals. Dividing by a power of
// ten (not multiplying by its inverse) gives the double nearest the decimal, which prints
// short.
inline double json_rate(double value) { return std::round(value); }
inline double json_fine(double value) { return std::round(value * 1e4) / 1e4; }

}  // namespace outboxd::bench
