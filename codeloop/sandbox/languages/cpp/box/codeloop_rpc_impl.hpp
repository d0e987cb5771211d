// codeloop_rpc.hpp's functions that do not depend on the types crossing. Included by
// that header (each check compiles them, inline), or compiled once into the sandbox's
// library by codeloop_rpc_lib.cpp (CODELOOP_DEF empty: one definition to link).
#pragma once
#ifndef CODELOOP_DEF
#define CODELOOP_DEF inline
#endif

namespace codeloop {

CODELOOP_DEF char Reader::tag() {
  if (at >= text.size()) throw std::runtime_error("codeloop: value cut off");
  return text[at++];
}

CODELOOP_DEF void Reader::expect(char wanted) {
  if (tag() != wanted) throw std::runtime_error("codeloop: value of another type");
}

CODELOOP_DEF std::string Reader::until(char end) {
  std::size_t stop = text.find(end, at);
  if (stop == std::string::npos) throw std::runtime_error("codeloop: value cut off");
  std::string part = text.substr(at, stop - at);
  at = stop + 1;
  return part;
}

CODELOOP_DEF void non_finite(double value) {
  std::fprintf(stderr, "the solution returned %s where a finite number is expected\n",
               value != value ? "NaN" : value > 0 ? "Infinity" : "-Infinity");
  std::fflush(stderr);
  std::_Exit(1);  // no atexit handler: the nonce is never printed
}

CODELOOP_DEF std::size_t Reader::count() {
  std::string digits = until(':');
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error("codeloop: bad length");
  return static_cast<std::size_t>(std::stoull(digits));
}

CODELOOP_DEF void send(int fd, const std::string& payload) {
  std::string frame = std::to_string(payload.size()) + "\n" + payload;
  std::size_t done = 0;
  while (done < frame.size()) {
    ssize_t wrote = ::write(fd, frame.data() + done, frame.size() - done);
    if (wrote <= 0) throw std::runtime_error("codeloop: the other process is gone");
    done += static_cast<std::size_t>(wrote);
  }
}

CODELOOP_DEF bool receive(int fd, std::string& payload) {
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

CODELOOP_DEF int serve(int argc, char** argv, std::string (*handle)(Reader&)) {
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

CODELOOP_DEF Channel& channel() {
  static Channel state;
  return state;
}

CODELOOP_DEF void start(int requests, int replies) {
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

CODELOOP_DEF void finished() {
  // Registered with atexit: runs when the test's main returns, never after a failed
  // assert (abort) or a failed call (terminate). A test that never called the solution
  // passes any program: it ends with the vacuous line (function_tests.vacuous).
  Channel& state = channel();
  std::printf("\n%s%s\n", state.nonce.c_str(), state.calls == 0 ? ":vacuous" : "");
  std::fflush(stdout);
}

CODELOOP_DEF void drive(int argc, char** argv) {
  if (argc < 3) std::abort();
  start(std::atoi(argv[1]), std::atoi(argv[2]));
  std::atexit(finished);
}

}  // namespace codeloop

#undef CODELOOP_DEF
