# Every dependency comes from a Debian package (see README.md). Nothing is
# downloaded at configure or build time: find_package only.
find_package(nlohmann_json 3.10 REQUIRED CONFIG)
find_package(fmt 9 REQUIRED CONFIG)
find_package(CLI11 2.1 REQUIRED CONFIG)
if(VRAMCALC_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED CONFIG)
endif()
if(VRAMCALC_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED CONFIG)
endif()
