// codeloop's call channel between a C++ test process and the solution's process.
// Values are written type-tagged and length-prefixed (b bool, i integer, d floating,
// s string, l list, m map, p pair, n nothing, a boost::any); decoding checks every tag,
// so only the declared types cross, and the test compares values in its own process.
// A boost::any (where the code includes boost/any.hpp, CODELOOP_BOOST_ANY) travels
// as its exact dynamic type's name and value, from a closed list of plain types; an
// `int` stays an `int` and a `char` a `char`, and any other content is refused.
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
  char tag() {
    if (at >= text.size()) throw std::runtime_error("codeloop: value cut off");
    return text[at++];
  }
  void expect(char wanted) {
    if (tag() != wanted) throw std::runtime_error("codeloop: value of another type");
  }
  std::string until(char end) {
    std::size_t stop = text.find(end, at);
    if (stop == std::string::npos) throw std::runtime_error("codeloop: value cut off");
    std::string part = text.substr(at, stop - at);
    at = stop + 1;
    return part;
  }
  std::size_t count() {
    std::string digits = until(':');
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("codeloop: bad length");
    return static_cast<std::size_t>(std::stoull(digits));
  }
};

#ifdef CODELOOP_BOOST_ANY
boost::any get_any(Reader& in);
#endif

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
    return static_cast<T>(std::strtod(in.until(';').c_str(), nullptr));
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

inline void send(int fd, const std::string& payload) {
  std::string frame = std::to_string(payload.size()) + "\n" + payload;
  std::size_t done = 0;
  while (done < frame.size()) {
    ssize_t wrote = ::write(fd, frame.data() + done, frame.size() - done);
    if (wrote <= 0) throw std::runtime_error("codeloop: the other process is gone");
    done += static_cast<std::size_t>(wrote);
  }
}

inline bool receive(int fd, std::string& payload) {
  std::string digits;
  char c;
  for (;;) {
    ssize_t got = ::read(fd, &c, 1);
    if (got <= 0) return false;
    if (c == '\n') break;
    if (c < '0' || c > '9' || digits.size() > 12) throw std::runtime_error("codeloop: bad frame");
    digits += c;
  }
  std::size_t size = static_cast<std::size_t>(std::stoull(digits));
  if (size > (std::size_t(64) << 20)) throw std::runtime_error("codeloop: message too large");
  payload.assign(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, &payload[done], size - done);
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

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

template <class F> int serve(int argc, char** argv, F handle) {
  if (argc < 3) return 2;
  int requests = std::atoi(argv[1]), replies = std::atoi(argv[2]);
  send(replies, "ready");
  std::string request;
  while (receive(requests, request)) {
    std::string reply;
    try {
      Reader in{request};
      reply = handle(in);
    } catch (const std::exception& error) {
      reply = std::string("e") + error.what();
    } catch (...) {
      reply = "eexception";
    }
    send(replies, reply);
  }
  return 0;
}

// --- the test's side --------------------------------------------------------------------

struct Channel {
  int requests = -1, replies = -1;
  std::string nonce;
};

inline Channel& channel() {
  static Channel state;
  return state;
}

inline void start(int requests, int replies) {
  Channel& state = channel();
  state.requests = requests;
  state.replies = replies;
  char line[256] = {0};
  if (!std::fgets(line, sizeof line, stdin)) std::abort();
  state.nonce = line;
  while (!state.nonce.empty() && (state.nonce.back() == '\n' || state.nonce.back() == '\r'))
    state.nonce.pop_back();
  std::string hello;
  if (!receive(replies, hello) || hello != "ready") {
    std::fprintf(stderr, "the solution's process ended before answering\n");
    std::exit(1);
  }
}

inline void finished() {
  // Registered with atexit: runs when the test's main returns, never after a failed
  // assert (abort) or a failed call (terminate).
  std::printf("\n%s\n", channel().nonce.c_str());
  std::fflush(stdout);
}

// Runs before the test's main (glibc passes argc and argv to constructors).
inline void drive(int argc, char** argv) {
  if (argc < 3) std::abort();
  start(std::atoi(argv[1]), std::atoi(argv[2]));
  std::atexit(finished);
}

template <class R, class... A> R call(const char* name, const A&... args) {
  std::string request = std::string(name) + "(";
  (put(request, args), ...);
  Channel& state = channel();
  send(state.requests, request);
  std::string reply;
  if (!receive(state.replies, reply)) throw std::runtime_error("the solution's process ended");
  if (reply.empty() || reply[0] != 'v') throw std::runtime_error("the solution raised: " + reply.substr(1));
  Reader in{reply, 1};
  if constexpr (std::is_void_v<R>) {
    return;
  } else {
    R value = get<R>(in);
    if (in.at != reply.size()) throw std::runtime_error("codeloop: trailing data");
    return value;
  }
}

}  // namespace codeloop
