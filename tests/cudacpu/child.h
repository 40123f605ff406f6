// child.h - a seeded-bug case in a child process, for the emulator's own tests (selftest.cu, redzone.cu):
// the child starts the emulator afresh (no CUDA call in the parent), so a check that ends it (ASan, TSan,
// synccheck) ends only that case.
#pragma once
#include <sys/wait.h>
#include <unistd.h>
#include <functional>
#include <string>

// runs fn in a child process with its stderr in err; returns fn's value, the child's exit status
// (128 + the signal when killed)
static inline int run_child(const std::function<int()> &fn, std::string &err) {
    int pfd[2];
    if (pipe(pfd)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 2);
        close(pfd[0]);
        _exit(fn());   // _exit: no leak check of the emulator's threads
    }
    close(pfd[1]);
    char buf[4096];
    ssize_t k;
    while ((k = read(pfd[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)k);
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
// the line of s holding word (the first line when none does), at most 160 characters
static inline std::string first_line(const std::string &s, const char *word) {
    size_t at = s.find(word);
    if (at == std::string::npos) at = 0;
    size_t b = s.rfind('\n', at), e = s.find('\n', at);
    b = b == std::string::npos ? 0 : b + 1;
    return s.substr(b, (e == std::string::npos ? s.size() : e) - b).substr(0, 160);
}
