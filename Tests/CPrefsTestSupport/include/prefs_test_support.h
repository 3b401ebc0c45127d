#ifndef PREFS_TEST_SUPPORT_H
#define PREFS_TEST_SUPPORT_H

/// What the tests need of the system that Swift cannot say (GNU-only calls behind macros).

/// Linux: keeps the calling thread on one processor only: the lowest-numbered one it may run on
/// now (a container's processor set need not include processor 0). Returns that processor's
/// number, or -1 with errno set (ENOTSUP elsewhere).
int prefs_test_pin_thread_to_one_processor(void);

#endif
