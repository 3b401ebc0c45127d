#include "prefs_shared.h"

#if defined(__APPLE__)
#include <notify.h>
#endif

#if defined(__linux__)
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

uint32_t prefs_atomic_load(const uint32_t *word) {
    return __atomic_load_n(word, __ATOMIC_SEQ_CST);
}

uint32_t prefs_atomic_increment(uint32_t *word) {
    return __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
}

int prefs_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ms) {
#if defined(__linux__)
    struct timespec timeout = {.tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000};
    // Not FUTEX_PRIVATE_FLAG: the word is shared with other processes.
    long result = syscall(SYS_futex, word, FUTEX_WAIT, expected, &timeout, NULL, 0);
    if (result == -1 && errno == ETIMEDOUT) return 1;
    return 0;  // woken, the value had changed (EAGAIN), or interrupted (EINTR): look again
#else
    (void)word;
    (void)expected;
    (void)timeout_ms;
    return -1;
#endif
}

int prefs_futex_wake_all(uint32_t *word) {
#if defined(__linux__)
    return (int)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
    return -1;
#endif
}

int prefs_notify_post(const char *name) {
#if defined(__APPLE__)
    return notify_post(name) == NOTIFY_STATUS_OK ? 0 : -1;
#else
    (void)name;
    return -1;
#endif
}

int prefs_notify_register(const char *name, int *descriptor, int *token) {
#if defined(__APPLE__)
    return notify_register_file_descriptor(name, descriptor, 0, token) == NOTIFY_STATUS_OK ? 0 : -1;
#else
    (void)name;
    (void)descriptor;
    (void)token;
    return -1;
#endif
}

int prefs_notify_cancel(int token) {
#if defined(__APPLE__)
    return notify_cancel(token) == NOTIFY_STATUS_OK ? 0 : -1;
#else
    (void)token;
    return -1;
#endif
}
