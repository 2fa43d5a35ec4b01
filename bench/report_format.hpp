#pragma once

// Formatting shared by the scenarios' parts of the report.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
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

// The median of `values` (the mean of the middle two for an even count); none if empty.
inline std::optional<double> median(std::vector<double> values) {
    if (values.empty()) return std::nullopt;
    std::sort(values.begin(), values.end());
    const auto n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Each run's rate divided by that of the run of the same repetition in `base` (run i with
// base i, minutes apart on the same machine), for as many as both have.
template <typename Run, typename Base>
std::vector<double> paired_ratios(const std::vector<Run>& runs, const std::vector<Base>& base) {
    std::vector<double> out;
    for (std::size_t i = 0; i < std::min(runs.size(), base.size()); ++i) {
        if (base[i].rows_per_s() > 0) out.push_back(runs[i].rows_per_s() / base[i].rows_per_s());
    }
    return out;
}

// CPU seconds per 10,000 rows, and bytes per row (0 without rows).
inline double per_10k(double cpu_s, std::int64_t rows) {
    return rows > 0 ? cpu_s * 1e4 / static_cast<double>(rows) : 0;
}
inline double per_row(std::int64_t bytes, std::int64_t rows) {
    return rows > 0 ? static_cast<double>(bytes) / static_cast<double>(rows) : 0;
}

inline std::string verdict(bool met) { return met ? "met" : "MISSED"; }

// Rows/s of each run, comma-separated.
template <typename Run>
std::string rates_of(const std::vector<Run>& runs) {
    std::string text;
    for (const auto& run : runs)
        text += (text.empty() ? "" : ", ") + strf("%.0f", run.rows_per_s());
    return text;
}

// Whether every run drained all it staged.
template <typename Run>
bool all_complete(const std::vector<Run>& runs) {
    return std::all_of(runs.begin(), runs.end(), [](const Run& run) { return run.complete; });
}

// Above this share of the machine used by other processes, a run is flagged as noisy.
inline constexpr double kNoisyForeignShare = 0.10;

// Rows/s of each run; a run that other processes disturbed says by how much.
template <typename Run>
std::string runs_list(const std::vector<Run>& runs) {
    std::string text;
    for (const auto& run : runs) {
        if (!text.empty()) text += ", ";
        text += strf("%.0f", run.rows_per_s());
        if (run.foreign_cpu > kNoisyForeignShare)
            text += strf(" (other %.0f%%)", run.foreign_cpu * 100);
    }
    return text;
}

// The heading of the table's throughput group; the floor, limit and e2e lines align to it.
inline constexpr const char* kThroughputHeading =
    "Throughput                                   rows/s  node cpu  pg cpu  worker  host  "
    "other  WAL    runs (rows/s)\n"
    "                                                      s/10k     s/10k   s/10k   busy  "
    "cpu    B/row\n";

// JSON numbers: rates as integers, everything else to 4 decimals. Dividing by a power of
// ten (not multiplying by its inverse) gives the double nearest the decimal, which prints
// short.
inline double json_rate(double value) { return std::round(value); }
inline double json_fine(double value) { return std::round(value * 1e4) / 1e4; }

}  // namespace outboxd::bench
