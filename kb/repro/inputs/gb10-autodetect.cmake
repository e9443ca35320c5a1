# torch's CUDA_SELECT_NVCC_ARCH_FLAGS with no architecture list ("Auto", as torch's CMake calls it
# when TORCH_CUDA_ARCH_LIST is unset), its GPU detection answered as on a GB10. kb repro runs it as
#   cmake -DCUDA_VERSION=13.0 -DWHEEL_FILE=<select_compute_arch.cmake of a torch wheel> -P gb10-autodetect.cmake
cmake_minimum_required(VERSION 3.18)

# The detection compiles and runs a program printing each GPU's "major.minor " (cudaGetDeviceProperties).
# With no GPU and no CUDA here, try_run is replaced by one that hands back what that program prints on
# a GB10, capability 12.1, and reports that it compiled and exited 0.
function(try_run run_result compile_result)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "RUN_OUTPUT_VARIABLE" "")
  set(${compile_result} TRUE PARENT_SCOPE)
  set(${run_result} 0 PARENT_SCOPE)
  set(${ARG_RUN_OUTPUT_VARIABLE} "12.1 " PARENT_SCOPE)
endfunction()

# Run as a script there is no build folder; the file writes its detection source there.
set(PROJECT_BINARY_DIR "${CMAKE_CURRENT_BINARY_DIR}")
include("${WHEEL_FILE}")
cuda_select_nvcc_arch_flags(flags)
# The flags as the nvcc command line carries them (a CMake list joins them with ';').
list(JOIN flags " " shown)
message(STATUS "nvcc flags: ${shown}")
