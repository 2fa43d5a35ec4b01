#include "outboxd/store/delivery_controls.hpp"

namespace outboxd::store {

std::string_view to_string(Ordering ordering) noexcept {
    return ordering == Ordering::workflow ? "workflow" : "none";
}

std::string_view to_string(OnDeadLetter policy) noexcept {
    return policy == OnDeadLetter::skip ? "skip" : "block";
}

bool parse_ordering(std::string_view token, Ordering& ordering) noexcept {
    if (token == "none") {
        ordering = Ordering::none;
    } else if (token == "workflow") {
        ordering = Ordering::workflow;
    } else {
        return false;
    }
    return true;
}

bool parse_on_dead_letter(std::string_view token, OnDeadLetter& policy) noexcept {
    if (token == "block") {
        policy = OnDeadLetter::block;
    } else if (token == "skip") {
        policy = OnDeadLetter::skip;
    } else {
        return false;
    }
    return true;
}

}  // namespace outboxd::store
