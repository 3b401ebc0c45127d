// The power-loss simulation's recorder, preloaded into a writer (LD_PRELOAD, Linux):
// after every successful `fsync` or `fdatasync` of a file in $PREFS_POWERLOSS_WATCH, the file's
// whole content is copied to $PREFS_POWERLOSS_SYNCED/<name>: the state the medium is known to
// hold. Every call is also appended to $PREFS_POWERLOSS_SYNCED/calls.log ("msync", "fdatasync
// <name>", "fsync <name>", and "fsync ." for the watched folder itself), so a test can check the
// order of the calls.
//
// Built by the tests with the toolchain's clang; not part of the package.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t recording = PTHREAD_MUTEX_INITIALIZER;

/// Appends one line to calls.log (the folder is locked with flock: writers in several processes).
static void log_call(const char *folder, const char *line) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/calls.log", folder);
    int descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (descriptor < 0) return;
    (void)!write(descriptor, line, strlen(line));
    close(descriptor);
}

/// Copies the file open at `descriptor` to the synced folder, when it is in the watched one.
static void record(int descriptor, const char *call) {
    const char *watched = getenv("PREFS_POWERLOSS_WATCH");
    const char *folder = getenv("PREFS_POWERLOSS_SYNCED");
    if (!watched || !folder) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
    ssize_t length = readlink(link, path, sizeof path - 1);
    if (length <= 0) return;
    path[length] = 0;
    size_t prefix = strlen(watched);
    if (strcmp(path, watched) == 0) {
        // The folder itself (a new file's name made durable): logged as ".", nothing copied.
        char line[64];
        snprintf(line, sizeof line, "%s .\n", call);
        pthread_mutex_lock(&recording);
        log_call(folder, line);
        pthread_mutex_unlock(&recording);
        return;
    }
    if (strncmp(path, watched, prefix) != 0 || path[prefix] != '/') return;
    const char *name = path + prefix + 1;
    pthread_mutex_t *mutex = &recording;
    pthread_mutex_lock(mutex);
    char lockPath[PATH_MAX], temporary[PATH_MAX], destination[PATH_MAX], line[PATH_MAX + 32];
    snprintf(lockPath, sizeof lockPath, "%s/.lock", folder);
    int lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0) flock(lock, LOCK_EX);
    snprintf(temporary, sizeof temporary, "%s/.%s.%d", folder, name, getpid());
    snprintf(destination, sizeof destination, "%s/%s", folder, name);
    int source = open(path, O_RDONLY | O_CLOEXEC);
    int copy = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (source >= 0 && copy >= 0) {
        char buffer[1 << 16];
        ssize_t count;
        while ((count = read(source, buffer, sizeof buffer)) > 0) (void)!write(copy, buffer, (size_t)count);
        close(copy);
        copy = -1;
        rename(temporary, destination);
    }
    if (source >= 0) close(source);
    if (copy >= 0) close(copy);
    snprintf(line, sizeof line, "%s %s\n", call, name);
    log_call(folder, line);
    if (lock >= 0) close(lock);  // releases the flock
    pthread_mutex_unlock(mutex);
}

int fdatasync(int descriptor) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int result = real(descriptor);
    if (result == 0) record(descriptor, "fdatasync");
    return result;
}

int fsync(int descriptor) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int result = real(descriptor);
    if (result == 0) record(descriptor, "fsync");
    return result;
}

int msync(void *address, size_t length, int flags) {
    static int (*real)(void *, size_t, int);
    if (!real) real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "msync");
    int result = real(address, length, flags);
    const char *folder = getenv("PREFS_POWERLOSS_SYNCED");
    if (result == 0 && folder && (flags & MS_SYNC)) {
        pthread_mutex_lock(&recording);
        log_call(folder, "msync\n");
        pthread_mutex_unlock(&recording);
    }
    return result;
}
