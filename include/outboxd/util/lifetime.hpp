#pragma once

// Lets work that comes back later (a lane's result posted to the loop, a timer) find out
// whether the object that started it still exists. The owner holds a Lifetime as its last
// member, so that it ends first; callbacks hold a watch() and do nothing once it has expired.
//
// Thread affinity: the owner's thread (the loop): a watch is checked where the owner dies.

#include <memory>

namespace outboxd::util {

class Lifetime {
public:
    Lifetime() = default;
    Lifetime(const Lifetime&) = delete;
    Lifetime& operator=(const Lifetime&) = delete;

    [[nodiscard]] std::weak_ptr<const void> watch() const { return token_; }

private:
    std::shared_ptr<const int> token_ = std::make_shared<const int>(0);
};

// Whether the owner a watch() was taken from still exists.
[[nodiscard]] inline bool alive(const std::weak_ptr<const void>& watch) { return !watch.expired(); }

}  // namespace outboxd::util
