# Warnings apply to our own targets only, never to third-party headers.
# -Werror is for developers and CI (the dev and asan presets), not for users
# whose newer compiler may warn about something new.
add_library(vramcalc_warnings INTERFACE)
target_compile_options(vramcalc_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
  -Wnull-dereference -Wdouble-promotion -Wimplicit-fallthrough)
if(VRAMCALC_WARNINGS_AS_ERRORS)
  target_compile_options(vramcalc_warnings INTERFACE -Werror)
endif()
