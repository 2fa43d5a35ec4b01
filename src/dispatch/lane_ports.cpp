#include "outboxd/dispatch/lane_ports.hpp"

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::dispatch {

bool LaneRounds::round(ClaimRequest request, std::shared_ptr<ClaimerState> state,
                       std::optional<ClaimMarks::Release> release, std::weak_ptr<const void> owner,
                       Done done) {
    return rounds_.call(
        loop_, std::move(owner),
        [request = std::move(request), state = std::move(state), release = std::move(release),
         database = database_](store::ClaimStores& db) {
            if (release) {
                // A claim failed: what it may have claimed unseen goes back first.
                const auto released =
                    db.claims.release_claims_after(request.owner, release->after, release->kept);
                if (released > 0) {
                    spdlog::warn("event=unknown_claims_released database={} rows={}", database,
                                 released);
                    state->tally.known = false;
                }
            }
            return claim_round(db.claims, request, *state);
        },
        std::move(done));
}

bool LaneRounds::apart(ClaimRequest request, std::weak_ptr<const void> owner, Done done) {
    return apart_.call(
        loop_, std::move(owner),
        [request = std::move(request)](store::ClaimStores& db) {
            return dispatch::claim_apart(db.claims, request);
        },
        std::move(done));
}

void LaneRounds::prepare_apart() {
    (void)apart_.submit([](store::ClaimStores& db) {
        try {
            db.claims.connect();
        } catch (const std::exception& error) {
            spdlog::debug("event=claims_apart_connect_failed error=\"{}\"",
                          util::log_safe(error.what()));
        }
    });
}

void LaneTaskWrites::on_events(Events events) {
    outcomes_.on_settled(std::move(events.settled));
    outcomes_.on_rearmed(std::move(events.rearmed));
    outcomes_.on_let_go(std::move(events.let_go));
}

}  // namespace outboxd::dispatch
