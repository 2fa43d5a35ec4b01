#include "chaos_settings.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace outboxd::chaos {

namespace {

constexpr int kExitInvalidSettings = 2;

// CI's profile: every fault once, a lighter load and shorter settles (about 2.5 minutes).
void apply_quick_profile(ChaosSettings& settings) {
    settings.rounds = 1;
    settings.rows_per_s = 200;
    settings.warmup = std::chrono::milliseconds{6000};
    settings.settle = std::chrono::milliseconds{10000};
    settings.drain_timeout = std::chrono::milliseconds{60000};
}

std::string directory_of_this_binary() {
    return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

std::string fault_names() {
    std::string names;
    for (const auto kind : all_faults()) {
        names += (names.empty() ? "" : ", ") + std::string{name_of(kind)};
    }
    return names;
}

// Every fault, and how switchover and pgbouncer-restart shape the database side of a run.
std::string faults_help() {
    std::string text = "Faults, in the order a run injects them:\n";
    for (const auto kind : all_faults()) {
        const auto name = std::string{name_of(kind)};
        text += "  " + name + std::string(20 - name.size(), ' ') +
                std::string{description_of(kind)} + "\n";
    }
    text +=
        "With switchover, PostgreSQL gets a synchronous streaming standby, and the nodes, given\n"
        "both servers in one URL (target_session_attrs=read-write), follow the promoted one on\n"
        "their own. A later switchover first makes the old primary a standby again (a new base\n"
        "backup, on its old port). With pgbouncer-restart, the nodes reach PostgreSQL through\n"
        "PgBouncer (session mode) for the whole run; with both, through PgBouncer only, which a\n"
        "switchover points at the new primary (SIGHUP).";
    return text;
}

}  // namespace

bool ChaosSettings::injects(FaultKind kind) const {
    return std::find(faults.begin(), faults.end(), kind) != faults.end();
}

std::variant<ChaosSettings, int> parse_settings(int argc, char** argv) {
    CLI::App app{
        "outboxd-chaos: runs nodes and workers under steady load, injects faults in turn and "
        "checks that nothing is lost. The last line of stdout is one JSON object."};
    ChaosSettings settings;
    std::string faults;
    std::optional<int> rounds;
    std::optional<double> rate;
    std::optional<double> settle_s;
    std::optional<int> workers;
    settings.pgtmp = OUTBOXD_CHAOS_DEFAULT_PGTMP;
    app.footer(faults_help());
    app.add_flag("--quick", settings.quick, "CI run: every fault once, short settles");
    app.add_flag("--keep", settings.keep, "keep the scratch directory (logs, delivery logs)");
    app.add_option("--faults", faults,
                   "faults to inject, comma-separated: " + fault_names() + " (default: all)");
    app.add_option("--rounds", rounds, "times each fault is injected (quick 1, full 2)")
        ->check(CLI::Range(1, 20));
    app.add_option("--rate", rate, "rows staged per second (quick 200, full 300)")
        ->check(CLI::Range(1.0, 20000.0));
    app.add_option("--settle-s", settle_s, "seconds of load after each fault (quick 10, full 15)")
        ->check(CLI::Range(1.0, 600.0));
    app.add_option("--workers", workers, "worker processes (default 3)")->check(CLI::Range(1, 32));
    app.add_option("--bin-dir", settings.bin_dir,
                   "directory of outboxd and outboxd-worker (default: this binary's)");
    app.add_option("--pgtmp", settings.pgtmp, "the scripts/pgtmp to start PostgreSQL with")
        ->capture_default_str();
    app.add_option("--work-dir", settings.work_dir,
                   "scratch directory (default: a new /tmp/outboxd-chaos.XXXXXX)");
    try {
        app.parse(argc, argv);
        if (settings.quick) apply_quick_profile(settings);
        if (!faults.empty()) settings.faults = parse_fault_list(faults);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        std::cerr << "outboxd-chaos: " << error.what() << "\n";
        return kExitInvalidSettings;
    } catch (const std::invalid_argument& error) {
        std::cerr << "outboxd-chaos: " << error.what() << "\n";
        return kExitInvalidSettings;
    }
    if (rounds) settings.rounds = *rounds;
    if (rate) settings.rows_per_s = *rate;
    if (settle_s) settings.settle = std::chrono::milliseconds{static_cast<long>(*settle_s * 1000)};
    if (workers) settings.workers = *workers;
    if (settings.bin_dir.empty()) settings.bin_dir = directory_of_this_binary();
    return settings;
}

}  // namespace outboxd::chaos
