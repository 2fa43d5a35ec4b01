# Included at the end of project(outboxd) through CMAKE_PROJECT_outboxd_INCLUDE when the
# root CMakeLists.txt does not list bench/ itself (standalone bench builds; scripts/bench
# before the root lists it). Defines the driver at the end of the root directory, where
# every target and imported package of the main project is visible; a no-op when the root
# added bench/ already. (Deferred calls may not add subdirectories, hence include.)
function(outboxd_attach_bench)
  include(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/outboxd_bench.cmake)
endfunction()
cmake_language(DEFER CALL outboxd_attach_bench)
