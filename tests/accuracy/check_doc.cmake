# Fails when a generated file (docs/accuracy.md, detail/error_bands_data.hpp) is not
# what the current model prints: regenerate with `make accuracy` and commit it.
execute_process(COMMAND ${EXE} ${ARGS} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpuplan-accuracy ${ARGS} failed (${rc})")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${DOC} is stale: run `make accuracy` and commit it")
endif()
