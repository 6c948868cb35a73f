# vramcalc_embed_data(<output.cpp> <files...>) writes a C++ source that holds
# each file's text as a raw string literal, keyed by file name, so the library
# carries the bundled presets and GPU catalog without reading the disk.
function(vramcalc_embed_data output)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output} "-DFILES=${ARGN}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_data_script.cmake
    DEPENDS ${ARGN} ${PROJECT_SOURCE_DIR}/cmake/embed_data_script.cmake
    COMMENT "Embedding bundled model presets and GPU catalog"
    VERBATIM)
endfunction()
