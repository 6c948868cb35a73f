# Runs vramcalc with --svg into a fresh file and checks the file is a
# well-formed SVG document: -DEXE=<vramcalc> -DCHECK=<check_svg> -DOUT=<file>
# -DARGS=<|-separated arguments, without --svg>.
string(REPLACE "|" ";" args "${ARGS}")
file(REMOVE ${OUT})
execute_process(COMMAND ${EXE} ${args} --svg ${OUT} OUTPUT_QUIET RESULT_VARIABLE code)
if(NOT code EQUAL 0 AND NOT code EQUAL 1)
  message(FATAL_ERROR "vramcalc exited with ${code}")
endif()
if(NOT EXISTS ${OUT})
  message(FATAL_ERROR "vramcalc wrote no ${OUT}")
endif()
execute_process(COMMAND ${CHECK} ${OUT} RESULT_VARIABLE ok)
if(NOT ok EQUAL 0)
  message(FATAL_ERROR "${OUT} is not a well-formed SVG document")
endif()
