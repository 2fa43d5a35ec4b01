// A main for a fuzz target in a build without libFuzzer (GCC, the test command's build): runs
// LLVMFuzzerTestOneInput once over every file named on the command line or found in a
// directory named there, in name order, so that the committed corpus is replayed by CTest in
// every build and a target that no longer compiles breaks the ordinary build at once.
//
// A failed oracle aborts (fuzz_check.hpp), as it does under libFuzzer; the file being run is
// printed first, so the log names the input.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

std::vector<std::filesystem::path> inputs_of(int argc, char** argv) {
    std::vector<std::filesystem::path> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path path{argv[i]};
        if (std::filesystem::is_directory(path)) {
            std::vector<std::filesystem::path> files;
            for (const auto& entry : std::filesystem::directory_iterator{path}) {
                if (entry.is_regular_file()) files.push_back(entry.path());
            }
            std::sort(files.begin(), files.end());
            inputs.insert(inputs.end(), files.begin(), files.end());
        } else {
            inputs.push_back(path);
        }
    }
    return inputs;
}

}  // namespace

int main(int argc, char** argv) {
    if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
    const auto inputs = inputs_of(argc, argv);
    if (inputs.empty()) {
        std::fprintf(stderr, "replay: no input files (give files or directories)\n");
        return 2;
    }
    for (const auto& path : inputs) {
        std::ifstream file{path, std::ios::binary};
        if (!file) {
            std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
            return 2;
        }
        const std::string bytes{std::istreambuf_iterator<char>{file}, {}};
        std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("replay: %zu inputs passed\n", inputs.size());
    return 0;
}
