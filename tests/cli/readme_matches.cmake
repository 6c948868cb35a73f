# Checks that README.md shows the golden output of the readme-train case:
# -DREADME=<README.md> -DCASE=<case dir>.
file(READ ${README} readme)
file(READ ${CASE}/stdout expected)
string(FIND "${readme}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not contain the output of ${CASE}; paste ${CASE}/stdout into it")
endif()
