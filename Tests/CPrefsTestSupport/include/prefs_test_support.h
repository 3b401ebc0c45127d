#ifndef PREFS_TEST_SUPPORT_H
#define PREFS_TEST_SUPPORT_H

/// What the tests need of the system that Swift cannot say (GNU-only calls behind macros).

/// Linux: keeps the calling thread on processor `processor` only. Returns 0, or an errno value
/// (ENOTSUP elsewhere).
int prefs_test_pin_thread(int processor);

#endif
