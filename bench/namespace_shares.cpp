#include "namespace_shares.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <pqxx/pqxx>

#include "bench_database.hpp"

namespace outboxd::bench {

std::int64_t NamespaceShares::rows() const {
    return std::accumulate(totals.begin(), totals.end(), std::int64_t{0});
}

NamespaceShares read_namespace_shares(const std::string& url,
                                      const std::vector<std::string>& namespaces,
                                      double window_seconds) {
    NamespaceShares shares;
    shares.namespaces = namespaces;
    shares.totals.assign(namespaces.size(), 0);
    pqxx::connection conn{url};
    pqxx::nontransaction tx{conn};
    const auto names = text_array(namespaces);
    // The span's bounds stay timestamps inside the database (the counts below compute them
    // again the same way): a bound read out as a number and passed back could miss the
    // rows it came from by a rounding. MATERIALIZED: computed once, never rescanned as
    // the inner side of a join (which took minutes over 90,000 rows).
    const std::string per_namespace = R"SQL(
WITH per_namespace AS (
  SELECT min(finished_at) AS first, max(finished_at) AS last FROM outbox
  WHERE status = 'done' AND namespace = ANY($1::text[]) GROUP BY namespace),
span AS MATERIALIZED (
  SELECT count(*) AS namespaces,
         CASE WHEN $2::bool THEN max(first) ELSE min(first) END AS start,
         CASE WHEN $2::bool THEN min(last) ELSE max(last) END AS stop
  FROM per_namespace))SQL";
    const auto span_of = [&](bool together) {
        return tx.exec_params1(per_namespace + R"SQL(
SELECT namespaces, coalesce(extract(epoch FROM stop - start)::float8, 0) FROM span)SQL",
                               names, together);
    };
    auto span = span_of(true);
    const auto served = span[0].as<std::size_t>();
    if (served == 0) {
        shares.together = false;
        return shares;
    }
    if (served < namespaces.size() || span[1].as<double>() <= 0) {
        shares.together = false;
        span = span_of(false);
    }
    shares.span_seconds = span[1].as<double>();
    auto windows = window_seconds > 0 ? std::floor(shares.span_seconds / window_seconds) : 1.0;
    if (windows < 1) {
        shares.partial = window_seconds > 0;
        windows = 1;
    }
    const bool whole_span = windows == 1 && (window_seconds <= 0 || shares.partial);
    shares.window_seconds = whole_span ? shares.span_seconds : window_seconds;
    const auto count = static_cast<std::int64_t>(windows);
    shares.windows.assign(static_cast<std::size_t>(count),
                          std::vector<std::int64_t>(namespaces.size(), 0));
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < namespaces.size(); ++i) index[namespaces[i]] = i;
    // Both ends inclusive: the rows of one outcome write share its finished_at, and the
    // write that ends the span belongs to it.
    const auto rows = tx.exec_params(per_namespace + R"SQL(
SELECT o.namespace,
       floor(extract(epoch FROM o.finished_at - span.start)::float8 / $3::float8)::bigint,
       count(*)
FROM outbox o, span
WHERE o.status = 'done' AND o.namespace = ANY($1::text[])
  AND o.finished_at BETWEEN span.start AND span.stop
GROUP BY 1, 2)SQL",
                                     names, shares.together, std::max(shares.window_seconds, 1e-6));
    for (const auto& row : rows) {
        auto window = row[1].as<std::int64_t>();
        // Past the last whole window: the rest of the span, not read. On the span's very
        // end when one window is the whole span: its last write.
        if (window >= count) {
            if (!whole_span) continue;
            window = count - 1;
        }
        const auto n = row[2].as<std::int64_t>();
        const auto i = index.at(row[0].as<std::string>());
        shares.windows[static_cast<std::size_t>(window)][i] += n;
        shares.totals[i] += n;
    }
    return shares;
}

double max_share_error(const std::vector<std::int64_t>& counts,
                       const std::vector<double>& weights) {
    const auto total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
    const auto weight_sum = std::accumulate(weights.begin(), weights.end(), 0.0);
    if (total == 0 || weight_sum <= 0) return 1;
    double worst = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const double expected = weights[i] / weight_sum;
        const double share = static_cast<double>(counts[i]) / static_cast<double>(total);
        worst = std::max(worst, std::abs(share - expected) / expected);
    }
    return worst;
}

}  // namespace outboxd::bench
