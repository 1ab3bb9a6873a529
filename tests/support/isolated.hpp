// isolated.hpp — runs a reader in a forked child, so that a crash (stack overflow,
// SIGFPE, a UBSan abort in the asan build) or a hang is reported as a failed check
// instead of killing the suite; shared by the hostile-input tests.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <string>

#include <doctest/doctest.h>

#include "gpuplan/error.hpp"
#include "utf8.hpp"

namespace gpuplan::test {

// The outcome of running `f` in a child process, as one string:
//   "error: <message>"        f threw gpuplan::config_error
//   "accepted"                f returned
//   "exception: <what>"       f threw something else (a bug: only config_error may escape)
//   "crash: <signal/status>: <first sanitizer or error line>" (signal 14: ran past timeout_s)
inline std::string isolated(const std::function<void()>& f, unsigned timeout_s = 60) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  char errfile[] = "/tmp/gpuplan-hostile-XXXXXX";
  const int errfd = mkstemp(errfile);
  REQUIRE(errfd >= 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // doctest's crash handlers would report (and summarise) from the child.
    for (int sig : {SIGSEGV, SIGFPE, SIGABRT, SIGILL, SIGBUS, SIGALRM}) std::signal(sig, SIG_DFL);
    alarm(timeout_s);  // a reader that blocks or loops (a FIFO, /dev/zero) dies by SIGALRM: "crash: signal 14"
    close(out[0]);
    dup2(errfd, 2);
    std::string result;
    try {
      f();
      result = "accepted";
    } catch (const config_error& e) {
      result = std::string("error: ") + e.what();
    } catch (const std::exception& e) {
      result = std::string("exception: ") + e.what();
    }
    if (result.size() > 60000) result.resize(60000);
    const char* p = result.data();
    std::size_t left = result.size();
    while (left > 0) {
      const ssize_t w = write(out[1], p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    _exit(0);
  }
  close(out[1]);
  std::string result;
  char buf[4096];
  for (;;) {
    const ssize_t r = read(out[0], buf, sizeof buf);
    if (r <= 0) break;
    result.append(buf, static_cast<std::size_t>(r));
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    std::string err;
    std::ifstream in(errfile);
    std::string line;
    while (std::getline(in, line))
      if (line.find("ERROR:") != std::string::npos || line.find("runtime error") != std::string::npos) { err = line; break; }
    result = WIFSIGNALED(status) ? "crash: signal " + std::to_string(WTERMSIG(status)) : "crash: exit " + std::to_string(WEXITSTATUS(status));
    result += ": " + err;
  }
  close(errfd);
  unlink(errfile);
  return result;
}

// The rejection contract: config_error, one line, valid UTF-8, starts with `path`.
inline void check_rejected(const std::string& outcome, const std::string& path) {
  CAPTURE(outcome);
  REQUIRE(outcome.rfind("error: ", 0) == 0);
  const std::string msg = outcome.substr(7);
  CHECK(msg.rfind(path, 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(valid_utf8(msg));
  CHECK(msg.size() < 400);
}

}  // namespace gpuplan::test
