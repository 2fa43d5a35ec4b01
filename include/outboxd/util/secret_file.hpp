#pragma once

// Secrets read from files (the *_FILE and --*-file forms of secret settings, README
// "Configuration"), so that a token or key need not sit in the environment, where `ps e` and
// /proc/<pid>/environ show it, or on a command line.

#include <cstddef>
#include <string>

namespace outboxd::util {

// The largest file a secret is read from.
inline constexpr std::size_t kMaxSecretFileBytes = 65'536;

// The content of the file at `path`, its trailing line breaks trimmed (editors and `echo`
// add one). Throws std::runtime_error naming the path, never the content, when the file cannot
// be read, is empty or is larger than kMaxSecretFileBytes: callers prefix the setting's name.
[[nodiscard]] std::string read_secret_file(const std::string& path);

}  // namespace outboxd::util
