# VRAMCALC_SANITIZE builds everything of ours with AddressSanitizer and
# UndefinedBehaviorSanitizer; any report aborts the test that triggered it.
add_library(vramcalc_sanitizers INTERFACE)
if(VRAMCALC_SANITIZE)
  target_compile_options(vramcalc_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(vramcalc_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
