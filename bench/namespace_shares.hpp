#pragma once

// How a node shared its work between namespaces, read from the table after a run: the rows
// each namespace finished (`finished_at`), per window, over the span in which every one of
// them still had rows to do. That span runs from the latest first finish (the last
// namespace to get going) to the earliest last finish (the first namespace to run dry; for
// a run stopped early, about when it stopped). If some namespace finished nothing, or one
// ran dry before another started, there is no such span: the whole run is read instead
// (`together` false), and the namespace left out shows as a share of 0.
//
// Driver thread; opens its own connection; libpqxx errors propagate.

#include <cstdint>
#include <string>
#include <vector>

namespace outboxd::bench {

struct NamespaceShares {
    std::vector<std::string> namespaces;
    double span_seconds = 0;
    double window_seconds = 0;
    bool together = true;  // every namespace had rows to do throughout the span
    bool partial = false;  // the span was shorter than one window: one shorter window
    std::vector<std::vector<std::int64_t>> windows;  // [window][namespace], rows finished
    std::vector<std::int64_t> totals;                // [namespace], over the whole span

    [[nodiscard]] std::int64_t rows() const;
};

// `window_seconds` 0: one window over the whole span.
[[nodiscard]] NamespaceShares read_namespace_shares(const std::string& url,
                                                    const std::vector<std::string>& namespaces,
                                                    double window_seconds);

// Largest relative error of the shares of `counts` against `weights` (same order):
// max over i of |counts[i] / Σcounts − w[i] / Σw| ÷ (w[i] / Σw). 1 when nothing was counted.
[[nodiscard]] double max_share_error(const std::vector<std::int64_t>& counts,
                                     const std::vector<double>& weights);

}  // namespace outboxd::bench
