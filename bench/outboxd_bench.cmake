# The outboxd-bench target; included from bench/CMakeLists.txt or attach.cmake.
if(NOT TARGET outboxd-bench)
  file(GLOB outboxd_bench_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
  add_executable(outboxd-bench ${outboxd_bench_sources})
  target_link_libraries(outboxd-bench PRIVATE outboxd_store outboxd_sdk outboxd_broker_admin
    PkgConfig::PQXX PkgConfig::LIBNATS nlohmann_json::nlohmann_json CLI11::CLI11 spdlog::spdlog
    Threads::Threads outboxd_warnings)
endif()
