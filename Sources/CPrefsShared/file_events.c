// The kernel's queue of events on the store's files (inotify), for the check before each write
// that the file is still at its path: one `epoll_wait` that does not wait tells that nothing
// happened, cheaper than the `fstat` it replaces (and than asking the queue itself, `FIONREAD`).
#include "prefs_shared.h"

#include <errno.h>

#if defined(__linux__)
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

int prefs_file_events_open(void) { return inotify_init1(IN_NONBLOCK | IN_CLOEXEC); }

int prefs_file_events_poller(int queue) {
    int poller = epoll_create1(EPOLL_CLOEXEC);
    if (poller < 0) return -1;
    // Level-triggered: ready for as long as events wait in the queue.
    struct epoll_event interest = {.events = EPOLLIN};
    if (epoll_ctl(poller, EPOLL_CTL_ADD, queue, &interest) != 0) {
        int failure = errno;
        close(poller);
        errno = failure;
        return -1;
    }
    return poller;
}

int prefs_file_events_watch(int queue, int descriptor) {
    // The magic link names the open file itself: a file put at the path since it was opened is
    // never the one watched.
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
    return inotify_add_watch(queue, link, IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF);
}

int prefs_file_events_unwatch(int queue, int watch) { return inotify_rm_watch(queue, watch); }

int prefs_file_events_ready(int poller) {
    struct epoll_event ready;
    int count;
    do {
        count = epoll_wait(poller, &ready, 1, 0);
    } while (count < 0 && errno == EINTR);
    return count;
}

int prefs_file_events_discard(int queue) {
    // Large enough for any event (a header and a name of at most NAME_MAX bytes).
    char buffer[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    int found = 0;
    for (;;) {
        ssize_t count = read(queue, buffer, sizeof buffer);
        if (count > 0) {
            found = 1;
            continue;
        }
        if (count < 0 && errno == EINTR) continue;
        return count < 0 && errno != EAGAIN ? -1 : found;
    }
}

#else

int prefs_file_events_open(void) {
    errno = ENOTSUP;
    return -1;
}

int prefs_file_events_watch(int queue, int descriptor) {
    (void)queue;
    (void)descriptor;
    errno = ENOTSUP;
    return -1;
}

int prefs_file_events_unwatch(int queue, int watch) {
    (void)queue;
    (void)watch;
    errno = ENOTSUP;
    return -1;
}

int prefs_file_events_poller(int queue) {
    (void)queue;
    errno = ENOTSUP;
    return -1;
}

int prefs_file_events_ready(int poller) {
    (void)poller;
    errno = ENOTSUP;
    return -1;
}

int prefs_file_events_discard(int queue) {
    (void)queue;
    errno = ENOTSUP;
    return -1;
}

#endif
