#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // sched_getaffinity, sched_setaffinity, CPU_SET
#endif

#include "prefs_test_support.h"

#include <errno.h>
#include <sched.h>

int prefs_test_pin_thread_to_one_processor(void) {
#if defined(__linux__)
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
    for (int processor = 0; processor < CPU_SETSIZE; processor++) {
        if (!CPU_ISSET(processor, &allowed)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(processor, &one);
        return sched_setaffinity(0, sizeof one, &one) == 0 ? processor : -1;
    }
    errno = EINVAL;
    return -1;
#else
    errno = ENOTSUP;
    return -1;
#endif
}
