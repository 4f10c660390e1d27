# find_package(ptq): the imported target ptq::ptq (libptq.so and its headers).
# libptq's own dependencies are linked into it (with an RPATH), so users
# need nothing else.
include("${CMAKE_CURRENT_LIST_DIR}/ptqTargets.cmake")
