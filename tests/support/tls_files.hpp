#pragma once

// A throwaway certificate authority and a node certificate it signed, made with the openssl
// command line for one test: the certificate names localhost and 127.0.0.1.

#include <string>

namespace outboxd::test {

struct TlsFiles {
    std::string ca_file;    // PEM: the CA certificate clients trust
    std::string cert_file;  // PEM: the node's certificate
    std::string key_file;   // PEM: its private key
};

// Writes the files into `dir`. Throws std::runtime_error when openssl fails.
[[nodiscard]] TlsFiles make_test_certificates(const std::string& dir);

// Runs `command` through the shell; returns its exit code and its output (stdout and stderr).
struct CommandResult {
    int exit_code = -1;
    std::string output;
};
[[nodiscard]] CommandResult run_command(const std::string& command);

}  // namespace outboxd::test
