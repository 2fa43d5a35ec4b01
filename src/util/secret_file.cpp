#include "outboxd/util/secret_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace outboxd::util {

std::string read_secret_file(const std::string& path) {
    const auto cannot = [&path](const std::string& why) {
        throw std::runtime_error("cannot read '" + path + "': " + why);
    };
    if (path.empty()) throw std::runtime_error("the file name is empty");
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) cannot("it is a directory");
    std::ifstream in{path, std::ios::binary};
    if (!in) cannot(std::strerror(errno));
    // One byte more than the bound tells a file at the bound from a longer one.
    std::string text(kMaxSecretFileBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) cannot("read error");
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxSecretFileBytes) {
        throw std::runtime_error("'" + path + "' is larger than " +
                                 std::to_string(kMaxSecretFileBytes) + " bytes");
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) throw std::runtime_error("'" + path + "' is empty");
    return text;
}

}  // namespace outboxd::util
