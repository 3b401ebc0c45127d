// Atomic operations and futex waits on a word of memory that several processes map: the
// SQLite store's change counter. Swift has no atomics on a raw pointer into a shared mapping,
// and no futex; these few lines are the whole of it.
#ifndef PREFS_SHARED_H
#define PREFS_SHARED_H

#include <stdint.h>

/// The word's value (sequentially consistent).
uint32_t prefs_atomic_load(const uint32_t *word);

/// Adds one to the word and returns the new value (sequentially consistent).
uint32_t prefs_atomic_increment(uint32_t *word);

/// Linux: sleeps while the word still holds `expected`, at most `timeout_ms` milliseconds (a
/// futex on a shared mapping, woken by `prefs_futex_wake_all` from any process). Returns 0 when
/// woken or the value had changed, 1 on timeout, -1 elsewhere than Linux.
int prefs_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ms);

/// Linux: wakes every process and thread waiting on the word. Returns -1 elsewhere than Linux.
int prefs_futex_wake_all(uint32_t *word);

/// Apple platforms: posts the notify(3) notification `name` to every process. Returns 0 on
/// success, -1 on failure or elsewhere than Apple platforms.
int prefs_notify_post(const char *name);

/// Apple platforms: registers for the notification `name`; each one posted makes the returned
/// descriptor readable (4 bytes per notification). Returns 0 on success, -1 otherwise.
int prefs_notify_register(const char *name, int *descriptor, int *token);

/// Apple platforms: ends a registration (closing its descriptor). Returns 0 on success.
int prefs_notify_cancel(int token);

#endif
