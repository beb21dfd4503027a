# ROCm: the CUDA backend's sources compiled by hipcc, their CUDA names mapped
# by gpu_runtime.h, into libtessera-backend-hip.so. CMake's own HIP language
# cannot be used with Debian's ROCm (CMake 3.25 looks for hip-lang under
# lib/cmake, Debian installs it under the multiarch directory), so each
# source is compiled by a custom command.
find_program(TESSERA_HIPCC hipcc REQUIRED)
find_package(hip CONFIG REQUIRED)

# MI200 and MI300 by default. Debian 12's hipcc (ROCm 5.2, clang 15) does not
# know gfx942, so a default architecture the compiler refuses is dropped with
# a warning; one named in TESSERA_HIP_ARCHITECTURES must compile.
set(TESSERA_HIP_PROBE ${CMAKE_CURRENT_BINARY_DIR}/hip_probe.hip)
file(WRITE ${TESSERA_HIP_PROBE} "#include <hip/hip_runtime.h>\n__global__ void probe() {}\n")
if(NOT DEFINED TESSERA_HIP_ARCHITECTURES)
  set(TESSERA_HIP_ARCHITECTURES "")
  foreach(arch gfx90a gfx942)
    execute_process(COMMAND ${TESSERA_HIPCC} -x hip --offload-arch=${arch} -c ${TESSERA_HIP_PROBE} -o ${TESSERA_HIP_PROBE}.o
      RESULT_VARIABLE probe_status OUTPUT_QUIET ERROR_QUIET)
    if(probe_status EQUAL 0)
      list(APPEND TESSERA_HIP_ARCHITECTURES ${arch})
    else()
      message(WARNING "hipcc cannot compile for ${arch} (ROCm 5.7 or newer can): the HIP backend is built without it")
    endif()
  endforeach()
  if(NOT TESSERA_HIP_ARCHITECTURES)
    message(FATAL_ERROR "hipcc compiles for neither gfx90a nor gfx942; set TESSERA_HIP_ARCHITECTURES or -DTESSERA_HIP=OFF")
  endif()
endif()
message(STATUS "HIP backend: ${TESSERA_HIPCC}, architectures ${TESSERA_HIP_ARCHITECTURES}")

set(TESSERA_HIP_FLAGS -x hip -std=c++20 -O3 -fPIC -DTESSERA_HIP=1 -Wall -Wno-unused-parameter -Wno-unused-result -Wno-pass-failed
  -I${PROJECT_SOURCE_DIR})
foreach(arch IN LISTS TESSERA_HIP_ARCHITECTURES)
  list(APPEND TESSERA_HIP_FLAGS --offload-arch=${arch})
endforeach()
set(TESSERA_HIP_SOURCES cuda_backend.cu dequantize.cu elementwise.cu activation_q8.cu linear.cu attention.cu)

# RCCL for GPU parallel groups, where it is installed (Debian has none).
find_path(TESSERA_RCCL_INCLUDE rccl/rccl.h)
find_library(TESSERA_RCCL_LIBRARY rccl)
if(TESSERA_RCCL_INCLUDE AND TESSERA_RCCL_LIBRARY)
  list(APPEND TESSERA_HIP_SOURCES nccl_communicator.cu)
  list(APPEND TESSERA_HIP_FLAGS -DTESSERA_WITH_NCCL=1 -I${TESSERA_RCCL_INCLUDE})
else()
  message(STATUS "RCCL not found: the HIP backend refuses GPU parallel groups at run time")
endif()

set(TESSERA_HIP_OBJECTS "")
foreach(source IN LISTS TESSERA_HIP_SOURCES)
  set(object ${CMAKE_CURRENT_BINARY_DIR}/hip/${source}.o)
  add_custom_command(OUTPUT ${object}
    COMMAND ${TESSERA_HIPCC} ${TESSERA_HIP_FLAGS} -MD -MF ${object}.d -c ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${object}
    DEPENDS ${source} ${CMAKE_CURRENT_SOURCE_DIR}/hip.cmake
    DEPFILE ${object}.d
    COMMENT "hipcc kernels/cuda/${source}"
    VERBATIM)
  list(APPEND TESSERA_HIP_OBJECTS ${object})
endforeach()
set_source_files_properties(${TESSERA_HIP_OBJECTS} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)

# The CUDA folder's headers, named so the include graph
# (scripts/include_graph.py) sees the HIP library owning them too.
add_library(tessera_kernels_hip STATIC ${TESSERA_HIP_OBJECTS} cuda_backend.h gpu_runtime.h nccl_communicator.h)
set_target_properties(tessera_kernels_hip PROPERTIES LINKER_LANGUAGE CXX POSITION_INDEPENDENT_CODE ON)
target_link_libraries(tessera_kernels_hip PUBLIC tessera_comm tessera_backend_api hip::host)
if(TESSERA_RCCL_INCLUDE AND TESSERA_RCCL_LIBRARY)
  target_link_libraries(tessera_kernels_hip PUBLIC ${TESSERA_RCCL_LIBRARY})
endif()

# libtessera-backend-hip.so: devices hip:N. Without a ROCm driver or GPU it
# loads, says so, and the daemon serves on what is there.
tessera_backend_plugin(tessera-backend-hip plugin_entry.cc tessera_kernels_hip)
target_compile_definitions(tessera-backend-hip PRIVATE TESSERA_HIP=1)
