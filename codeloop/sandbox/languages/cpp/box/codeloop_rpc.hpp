// codeloop's call channel between a C++ test process and the solution's process.
// Values are written type-tagged and length-prefixed (b bool, i integer, d floating,
// s string, l list, m map, p pair, n nothing, a boost::any); decoding checks every tag,
// so only the declared types cross, and the test compares values in its own process.
// A boost::any (where the code includes boost/any.hpp, CODELOOP_BOOST_ANY) travels
// as its exact dynamic type's name and value, from a closed list of plain types; an
// `int` stays an `int` and a `char` a `char`, and any other content is refused.
// The functions that do not depend on the types crossing (the reader, the framing, the
// serving loop, the test's start and end) are in codeloop_rpc_impl.hpp. A check either
// compiles them in (this header includes it), or, where the sandbox built
// codeloop_rpc_lib.cpp once (CODELOOP_RPC_LIBRARY), links them from there, together
// with the codec for the types HumanEval-X's signatures use most.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>

namespace codeloop {

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_list : std::false_type {};
template <class T, class A> struct is_list<std::list<T, A>> : std::true_type {};
template <class T> struct is_map : std::false_type {};
template <class K, class V, class C, class A> struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class T> struct is_pair : std::false_type {};
template <class A, class B> struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T> inline constexpr bool unsupported = false;

#ifdef CODELOOP_BOOST_ANY
void put_any(std::string& out, const boost::any& value);
#endif

template <class T> void put(std::string& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    out += value ? "b1" : "b0";
  } else if constexpr (std::is_integral_v<T>) {
    out += "i" + std::to_string(static_cast<long long>(value)) + ";";
  } else if constexpr (std::is_floating_point_v<T>) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", static_cast<double>(value));
    out += std::string("d") + text + ";";
  } else if constexpr (std::is_same_v<T, std::string>) {
    out += "s" + std::to_string(value.size()) + ":" + value;
  } else if constexpr (is_vector<T>::value) {
    out += "l" + std::to_string(value.size()) + ":";
    for (std::size_t i = 0; i < value.size(); i++) put(out, static_cast<typename T::value_type>(value[i]));
  } else if constexpr (is_list<T>::value) {
    out += "l" + std::to_string(value.size()) + ":";
    for (const auto& item : value) put(out, item);
#ifdef CODELOOP_BOOST_ANY
  } else if constexpr (std::is_same_v<T, boost::any>) {
    put_any(out, value);
#endif
  } else if constexpr (is_map<T>::value) {
    out += "m" + std::to_string(value.size()) + ":";
    for (const auto& item : value) { put(out, item.first); put(out, item.second); }
  } else if constexpr (is_pair<T>::value) {
    out += "p";
    put(out, value.first);
    put(out, value.second);
  } else {
    static_assert(unsupported<T>, "codeloop: this type cannot cross between processes");
  }
}

struct Reader {
  const std::string& text;
  std::size_t at = 0;
  bool finite = false;  // the test's side reading a reply: NaN and infinities are refused
  char tag();
  void expect(char wanted);
  std::string until(char end);
  std::size_t count();
};

#ifdef CODELOOP_BOOST_ANY
boost::any get_any(Reader& in);
#endif

// The test's side got NaN or an infinity from the solution: a wrong answer, whatever the
// test's comparison would say (abs(NaN - y) > 1e-4 is false). Ends the test process.
[[noreturn]] void non_finite(double value);

template <class T> T get(Reader& in) {
  if constexpr (std::is_same_v<T, bool>) {
    in.expect('b');
    char bit = in.tag();
    if (bit != '0' && bit != '1') throw std::runtime_error("codeloop: bad bool");
    return bit == '1';
  } else if constexpr (std::is_integral_v<T>) {
    in.expect('i');
    return static_cast<T>(std::stoll(in.until(';')));
  } else if constexpr (std::is_floating_point_v<T>) {
    in.expect('d');
    T value = static_cast<T>(std::strtod(in.until(';').c_str(), nullptr));
    if (in.finite && !__builtin_isfinite(value)) non_finite(static_cast<double>(value));
    return value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    in.expect('s');
    std::size_t size = in.count();
    if (in.at + size > in.text.size()) throw std::runtime_error("codeloop: string cut off");
    std::string value = in.text.substr(in.at, size);
    in.at += size;
    return value;
  } else if constexpr (is_vector<T>::value || is_list<T>::value) {
    in.expect('l');
    std::size_t size = in.count();
    T value;
    for (std::size_t i = 0; i < size; i++) value.push_back(get<typename T::value_type>(in));
    return value;
#ifdef CODELOOP_BOOST_ANY
  } else if constexpr (std::is_same_v<T, boost::any>) {
    return get_any(in);
#endif
  } else if constexpr (is_map<T>::value) {
    in.expect('m');
    std::size_t size = in.count();
    T value;
    for (std::size_t i = 0; i < size; i++) {
      auto key = get<typename T::key_type>(in);
      value[key] = get<typename T::mapped_type>(in);
    }
    return value;
  } else if constexpr (is_pair<T>::value) {
    in.expect('p');
    auto first = get<typename T::first_type>(in);
    auto second = get<typename T::second_type>(in);
    return T(first, second);
  } else {
    static_assert(unsupported<T>, "codeloop: this type cannot cross between processes");
  }
}

#ifdef CODELOOP_BOOST_ANY
// The dynamic types a boost::any may hold to cross, by the name that travels.
template <class T> bool put_if(std::string& out, const boost::any& value, const char* name) {
  if (value.type() != typeid(T)) return false;
  out += std::string(name) + ":";
  put(out, boost::any_cast<T>(value));
  return true;
}

inline void put_any(std::string& out, const boost::any& value) {
  out += "a";
  if (value.empty()) {
    out += "empty:";
    return;
  }
  if (put_if<bool>(out, value, "bool") || put_if<char>(out, value, "char") ||
      put_if<signed char>(out, value, "schar") || put_if<unsigned char>(out, value, "uchar") ||
      put_if<short>(out, value, "short") || put_if<unsigned short>(out, value, "ushort") ||
      put_if<int>(out, value, "int") || put_if<unsigned>(out, value, "uint") ||
      put_if<long>(out, value, "long") || put_if<unsigned long>(out, value, "ulong") ||
      put_if<long long>(out, value, "llong") ||
      put_if<unsigned long long>(out, value, "ullong") || put_if<float>(out, value, "float") ||
      put_if<double>(out, value, "double") || put_if<std::string>(out, value, "string"))
    return;
  throw std::runtime_error(std::string("codeloop: a boost::any holding ") + value.type().name() +
                           " cannot cross between processes");
}

inline boost::any get_any(Reader& in) {
  in.expect('a');
  std::string name = in.until(':');
  if (name == "empty") return boost::any();
  if (name == "bool") return get<bool>(in);
  if (name == "char") return get<char>(in);
  if (name == "schar") return get<signed char>(in);
  if (name == "uchar") return get<unsigned char>(in);
  if (name == "short") return get<short>(in);
  if (name == "ushort") return get<unsigned short>(in);
  if (name == "int") return get<int>(in);
  if (name == "uint") return get<unsigned>(in);
  if (name == "long") return get<long>(in);
  if (name == "ulong") return get<unsigned long>(in);
  if (name == "llong") return get<long long>(in);
  if (name == "ullong") return get<unsigned long long>(in);
  if (name == "float") return get<float>(in);
  if (name == "double") return get<double>(in);
  if (name == "string") return get<std::string>(in);
  throw std::runtime_error("codeloop: unknown boost::any type " + name);
}
#endif

void send(int fd, const std::string& payload);

bool receive(int fd, std::string& payload);

// --- the solution's side ---------------------------------------------------------------

template <class R, class... A> std::string answer(R (*function)(A...), Reader& in) {
  std::tuple<std::decay_t<A>...> args{get<std::decay_t<A>>(in)...};
  std::string out = "v";
  if constexpr (std::is_void_v<R>) {
    std::apply(function, args);
    out += "n";
  } else {
    put(out, std::apply(function, args));
  }
  return out;
}

int serve(int argc, char** argv, std::string (*handle)(Reader&));

// --- the test's side --------------------------------------------------------------------

struct Channel {
  int requests = -1, replies = -1;
  std::string nonce;
  long long calls = 0;  // calls of the solution: none by the end means a vacuous test
};

Channel& channel();

void start(int requests, int replies);

void finished();

// Runs before the test's main (glibc passes argc and argv to constructors).
void drive(int argc, char** argv);

template <class R, class... A> R call(const char* name, const A&... args) {
  std::string request = std::string(name) + "(";
  (put(request, args), ...);
  Channel& state = channel();
  send(state.requests, request);
  state.calls++;
  std::string reply;
  if (!receive(state.replies, reply)) throw std::runtime_error("the solution's process ended");
  if (reply.empty() || reply[0] != 'v') throw std::runtime_error("the solution raised: " + reply.substr(1));
  Reader in{reply, 1, true};
  if constexpr (std::is_void_v<R>) {
    return;
  } else {
    R value = get<R>(in);
    if (in.at != reply.size()) throw std::runtime_error("codeloop: trailing data");
    return value;
  }
}

}  // namespace codeloop

// The codec for the types most signatures use, instantiated once in the library (not
// with boost::any, whose branch of put/get this unit would compile differently).
#define CODELOOP_RPC_COMMON_TYPES(X)                                                       \
  X(bool) X(int) X(long long) X(float) X(double) X(std::string) X(std::vector<int>)         \
  X(std::vector<long long>) X(std::vector<float>) X(std::vector<double>)                    \
  X(std::vector<std::string>) X(std::vector<std::vector<int>>)

#ifdef CODELOOP_RPC_LIBRARY
#ifndef CODELOOP_BOOST_ANY
#define CODELOOP_RPC_EXTERN(T)                                                            \
  extern template void put<T>(std::string&, const T&);                                    \
  extern template T get<T>(Reader&);
namespace codeloop {
CODELOOP_RPC_COMMON_TYPES(CODELOOP_RPC_EXTERN)
}  // namespace codeloop
#undef CODELOOP_RPC_EXTERN
#endif
#else
#include "codeloop_rpc_impl.hpp"
#endif
