#include "tls_files.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace outboxd::test {
namespace {

void openssl(const std::string& arguments) {
    const auto result = run_command("openssl " + arguments);
    if (result.exit_code != 0) {
        throw std::runtime_error("openssl " + arguments + " failed:\n" + result.output);
    }
}

}  // namespace

CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return result;
    std::array<char, 4096> chunk{};
    while (const auto n = std::fread(chunk.data(), 1, chunk.size(), pipe))
        result.output.append(chunk.data(), n);
    const int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

TlsFiles make_test_certificates(const std::string& dir) {
    TlsFiles files{dir + "/ca.pem", dir + "/node.pem", dir + "/node.key"};
    const std::string ca_key = dir + "/ca.key";
    const std::string request = dir + "/node.csr";
    const std::string extensions = dir + "/node.ext";
    std::ofstream{extensions} << "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                 "basicConstraints=CA:FALSE\n"
                                 "keyUsage=digitalSignature,keyEncipherment\n"
                                 "extendedKeyUsage=serverAuth\n";
    // P-256 keys: made in milliseconds, where RSA keys take a noticeable while.
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    openssl("req -x509" + key + " -keyout " + ca_key + " -out " + files.ca_file +
            " -days 2 -subj '/CN=outboxd test CA'");
    openssl("req" + key + " -keyout " + files.key_file + " -out " + request +
            " -subj '/CN=localhost'");
    openssl("x509 -req -in " + request + " -CA " + files.ca_file + " -CAkey " + ca_key +
            " -CAcreateserial -out " + files.cert_file + " -days 2 -extfile " + extensions);
    return files;
}

}  // namespace outboxd::test
