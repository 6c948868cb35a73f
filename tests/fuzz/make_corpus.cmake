# Script mode: -DSOURCE_DIR=<repo> -DOUTPUT_DIR=<dir>. Writes the seed corpus
# of each fuzz target to <dir>/<target>/, from files already in the repository
# (nothing generated is committed):
#   model: models/*.json and every JSON file under tests/data;
#   plan:  the same, plus a plan file made from each golden CLI case
#          (tests/cli/cases/*/args) whose MODEL is a preset or a config.json;
#   flags: each golden CLI case's workload flags, as "key=value" lines and as
#          one value per line in workload_keys() order.
cmake_minimum_required(VERSION 3.25)

# workload_keys() in src/io/workload_io.cpp, in order.
set(workload_keys mode batch seq dtype kv_dtype precision optimizer framework attention dropout checkpoint
    dp zero fsdp overhead gpu gpu_mem)
set(integer_keys batch seq dp zero)

file(REMOVE_RECURSE ${OUTPUT_DIR})
file(MAKE_DIRECTORY ${OUTPUT_DIR}/model ${OUTPUT_DIR}/plan ${OUTPUT_DIR}/flags)

file(GLOB model_files ${SOURCE_DIR}/models/*.json)
file(GLOB_RECURSE data_files ${SOURCE_DIR}/tests/data/*.json)
foreach(path IN LISTS model_files data_files)
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${path})
  string(REPLACE "/" "-" name "${rel}")
  file(COPY_FILE ${path} ${OUTPUT_DIR}/model/${name})
  file(COPY_FILE ${path} ${OUTPUT_DIR}/plan/${name})
endforeach()

file(GLOB cases LIST_DIRECTORIES true ${SOURCE_DIR}/tests/cli/cases/*)
foreach(case_dir IN LISTS cases)
  if(NOT EXISTS ${case_dir}/args)
    continue()
  endif()
  get_filename_component(case ${case_dir} NAME)
  file(STRINGS ${case_dir}/args args ENCODING UTF-8)
  list(LENGTH args count)
  if(count LESS 2)
    continue()
  endif()
  list(GET args 0 command)
  list(GET args 1 model)
  if(NOT command STREQUAL "plan")
    continue()
  endif()

  # Flag values: "--kv-dtype fp8" → key kv_dtype, value fp8.
  set(pairs "")
  set(workload "{}")
  foreach(key IN LISTS workload_keys)
    set(value_${key} "")
  endforeach()
  math(EXPR last "${count} - 1")
  set(i 2)
  while(i LESS count)
    list(GET args ${i} flag)
    math(EXPR i "${i} + 1")
    if(NOT flag MATCHES "^--(.+)$" OR i GREATER last)
      continue()
    endif()
    string(REPLACE "-" "_" key "${CMAKE_MATCH_1}")
    if(key MATCHES "^(check|json|help)$")
      continue()
    endif()
    list(GET args ${i} value)
    math(EXPR i "${i} + 1")
    if(key STREQUAL "format")
      continue()
    endif()
    string(APPEND pairs "${key}=${value}\n")
    if(key IN_LIST workload_keys)
      set(value_${key} "${value}")
      if(key IN_LIST integer_keys AND value MATCHES "^[0-9]+$")
        set(json_value "${value}")
      else()
        string(REPLACE "\\" "\\\\" escaped "${value}")
        string(REPLACE "\"" "\\\"" escaped "${escaped}")
        set(json_value "\"${escaped}\"")
      endif()
      string(JSON workload SET "${workload}" "${key}" "${json_value}")
    endif()
  endwhile()

  if(NOT pairs STREQUAL "")
    file(WRITE ${OUTPUT_DIR}/flags/case-${case}.pairs "${pairs}")
    set(lines "")
    foreach(key IN LISTS workload_keys)
      string(APPEND lines "${value_${key}}\n")
    endforeach()
    file(WRITE ${OUTPUT_DIR}/flags/case-${case}.lines "${lines}")
  endif()

  # A plan file with the same model and workload: a preset by name, or a
  # config.json inline.
  set(plan "{}")
  if(EXISTS ${SOURCE_DIR}/models/${model}.json)
    string(JSON plan SET "${plan}" model "\"${model}\"")
  elseif(model MATCHES "^\\.\\./data/configs/.*\\.json$")
    file(READ ${SOURCE_DIR}/tests/cli/${model} config)
    string(JSON plan SET "${plan}" model "${config}")
  else()
    continue()
  endif()
  string(JSON plan SET "${plan}" workload "${workload}")
  file(WRITE ${OUTPUT_DIR}/plan/case-${case}.json "${plan}\n")
endforeach()
