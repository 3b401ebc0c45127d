#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#endif

#include "prefs_test_support.h"

#include <errno.h>
#include <sched.h>

int prefs_test_pin_thread(int processor) {
#if defined(__linux__)
    cpu_set_t processors;
    CPU_ZERO(&processors);
    CPU_SET(processor, &processors);
    return sched_setaffinity(0, sizeof processors, &processors) == 0 ? 0 : errno;
#else
    (void)processor;
    return ENOTSUP;
#endif
}
