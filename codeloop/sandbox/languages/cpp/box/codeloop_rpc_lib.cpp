// The library the sandbox builds once per toolchain (function_tests.cpp_rpc_library):
// codeloop_rpc.hpp's type-independent functions and its codec for the common types.
#define CODELOOP_DEF
#include "codeloop_rpc.hpp"

#define CODELOOP_RPC_INSTANTIATE(T)                                                       \
  template void put<T>(std::string&, const T&);                                           \
  template T get<T>(Reader&);
namespace codeloop {
CODELOOP_RPC_COMMON_TYPES(CODELOOP_RPC_INSTANTIATE)
}  // namespace codeloop
