# VRAMCALC_BUILD_FUZZERS builds the libFuzzer targets of tests/fuzz (see the
# "fuzz" preset and .ci/fuzz). libFuzzer ships with clang only, so any other
# compiler is refused here rather than failing later at link time.
#
# Everything of ours is instrumented for coverage and built with
# AddressSanitizer and UndefinedBehaviorSanitizer (-fsanitize=fuzzer-no-link,
# through the vramcalc_sanitizers interface every target already links); the
# fuzz targets alone link the libFuzzer driver (-fsanitize=fuzzer).
if(NOT VRAMCALC_BUILD_FUZZERS)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "VRAMCALC_BUILD_FUZZERS=ON needs clang++ (libFuzzer is part of clang), but CMAKE_CXX_COMPILER is "
    "${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}). Use the fuzz preset "
    "(cmake --preset fuzz), or configure a fresh build directory with -DCMAKE_CXX_COMPILER=clang++.")
endif()

# The libFuzzer runtime is a separate Debian package (libclang-rt-14-dev on
# Debian 12); say so instead of failing at the first link.
include(CheckCXXSourceCompiles)
if(NOT VRAMCALC_HAVE_LIBFUZZER)
  unset(VRAMCALC_HAVE_LIBFUZZER CACHE)  # check again once the package is installed
endif()
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] VRAMCALC_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT VRAMCALC_HAVE_LIBFUZZER)
  message(FATAL_ERROR
    "VRAMCALC_BUILD_FUZZERS=ON: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer,address,undefined. "
    "Install the clang runtime libraries (Debian 12: apt-get install libclang-rt-14-dev), or run "
    ".ci/bootstrap fuzz. See CMakeFiles/CMakeError.log for the compiler's output.")
endif()

# _GLIBCXX_ASSERTIONS turns out-of-range std::vector/std::string indexing and
# the like into aborts, which the fuzzer reports as crashes.
target_compile_options(vramcalc_sanitizers INTERFACE
  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
target_compile_definitions(vramcalc_sanitizers INTERFACE _GLIBCXX_ASSERTIONS)
target_link_options(vramcalc_sanitizers INTERFACE -fsanitize=address,undefined)
