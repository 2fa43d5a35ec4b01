#include <cstdio>
#include <random>
#include <string>

namespace outboxd::http {

std::string new_session_id() {
    static thread_local std::mt19937_64 random{std::random_device{}()};
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(random()));
    return buffer;
}

}  // namespace outboxd::http
