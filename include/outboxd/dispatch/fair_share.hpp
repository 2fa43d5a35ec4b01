#pragma once

// Deals each claim round's batch over the namespaces that can take rows now (due rows, free
// worker credit, headroom under their ceiling) in proportion to their weights, across rounds:
// deficit round robin. Every round each namespace is owed weight/Σweights of the batch; it
// takes what it is owed and can take, whole rows, and carries the fraction to the next
// round. What a namespace cannot take (less room than it is owed) goes to the others, most
// owed first, so the batch is never left unused while someone can take it. A namespace that
// took all it could (its backlog ran dry) keeps no credit: it is owed nothing for rounds it
// had nothing to claim. A quiet namespace is therefore served in the first round it has a
// due row, whatever the backlog of the others, as long as there are fewer namespaces with
// work than rows in a batch.
//
// Pure logic; one owner (the claimer), one round at a time.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace outboxd::dispatch {

class FairShare {
public:
    struct Demand {
        std::string namespace_name;
        std::int64_t weight = 1;  // 1..1000
        std::int64_t room = 0;    // the most rows it can take this round
    };

    // Rows for each demand (same order), in total at most `budget`, each at most its room.
    [[nodiscard]] std::vector<std::int64_t> deal(const std::vector<Demand>& demands,
                                                 std::int64_t budget);

    // Rows dealt to a namespace this round that it could not take after all (the workers'
    // credit it shares with others ran out): it is owed them again.
    void refund(const std::string& namespace_name, std::int64_t rows);

    // What a namespace is owed from earlier rounds (for tests and the curious).
    [[nodiscard]] double owed(const std::string& namespace_name) const;

private:
    struct Account {
        double owed = 0;
        std::uint64_t served = 0;  // the last round it got rows: ties go to the longest waiting
    };
    std::map<std::string, Account> accounts_;
    std::uint64_t round_ = 0;
};

}  // namespace outboxd::dispatch
