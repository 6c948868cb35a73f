# Fails when docs/accuracy.md differs from the accuracy report's output:
# -DEXE=<vramcalc_accuracy> -DDOC=<docs/accuracy.md>.
execute_process(COMMAND ${EXE} OUTPUT_VARIABLE report RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "the accuracy report failed with exit code ${code}")
endif()
file(READ ${DOC} doc)
if(NOT doc STREQUAL report)
  message(FATAL_ERROR "docs/accuracy.md is out of date: regenerate it with ${EXE} > ${DOC}")
endif()

# The README shows the same table.
if(DEFINED README)
  string(FIND "${report}" "| kind |" start)
  string(SUBSTRING "${report}" ${start} -1 rest)
  string(FIND "${rest}" "\n\n" stop)
  string(SUBSTRING "${rest}" 0 ${stop} table)
  file(READ ${README} readme)
  string(FIND "${readme}" "${table}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md's accuracy table differs from the report: paste it from docs/accuracy.md")
  endif()
endif()
