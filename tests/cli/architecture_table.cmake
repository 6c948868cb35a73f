# Checks docs/architecture.md's "Where is it computed" table against the
# code: each row's file exists and defines (or declares) its function.
# -DDOC=<docs/architecture.md> -DROOT=<source dir>.
file(STRINGS ${DOC} lines REGEX "^\\| [^|]+ \\| `[^`]+` \\| `[^`]+` \\|$")
list(LENGTH lines rows)
if(rows LESS 10)
  message(FATAL_ERROR "${DOC}: the table has ${rows} rows; expected at least 10")
endif()
foreach(line IN LISTS lines)
  string(REGEX MATCH "\\| `([^`]+)` \\| `([^`]+)` \\|$" _ "${line}")
  set(path ${CMAKE_MATCH_1})
  set(symbol ${CMAKE_MATCH_2})
  if(NOT EXISTS ${ROOT}/${path})
    message(FATAL_ERROR "${DOC}: ${path} does not exist (row: ${line})")
  endif()
  file(READ ${ROOT}/${path} text)
  # A definition or declaration: the name followed by "(", "[" or " =".
  string(REGEX MATCH "[ *&]${symbol}(\\(|\\[| =| \\{)" found "${text}")
  if(NOT found)
    message(FATAL_ERROR "${DOC}: ${path} has no function ${symbol} (row: ${line})")
  endif()
endforeach()
message(STATUS "${rows} rows checked")
