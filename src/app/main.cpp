#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "outboxd/store/migrator.hpp"
#include "outboxd/store/store_error.hpp"

int main(int argc, char** argv) {
    CLI::App app{"outboxd"};
    std::string url;
    app.add_option("--database-url", url)->envname("OUTBOXD_DATABASE_URL");
    app.add_subcommand("migrate", "apply migrations and exit");
    CLI11_PARSE(app, argc, argv);
    try {
        const auto report = outboxd::store::migrate(url);
        spdlog::info("migrated to {}", report.current_version);
    } catch (const outboxd::store::StoreError& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
}
