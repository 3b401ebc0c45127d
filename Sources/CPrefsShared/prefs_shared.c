#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // F_OFD_SETLK: locks owned by an open file description
#endif

#include "prefs_shared.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include <pthread.h>
#include <stdlib.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/mman.h>

#if defined(__APPLE__)
#include <notify.h>
#include <pthread/qos.h>
#endif

#if defined(__linux__)
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

uint32_t prefs_atomic_load(const uint32_t *word) { return __atomic_load_n(word, __ATOMIC_SEQ_CST); }

uint32_t prefs_atomic_increment(uint32_t *word) { return __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST); }

uint32_t prefs_atomic_exchange(uint32_t *word, uint32_t value) {
    return __atomic_exchange_n(word, value, __ATOMIC_SEQ_CST);
}

void prefs_atomic_store(uint32_t *word, uint32_t value) { __atomic_store_n(word, value, __ATOMIC_SEQ_CST); }

void prefs_atomic_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PREFS_NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef PREFS_NO_TSAN
#define PREFS_NO_TSAN
#endif

PREFS_NO_TSAN void prefs_racy_copy(void *destination, const void *source, size_t count) {
    // Byte by byte through volatile: no interceptor sees it, and the compiler cannot assume the
    // source holds still.
    volatile const unsigned char *from = (volatile const unsigned char *)source;
    unsigned char *to = (unsigned char *)destination;
    for (size_t index = 0; index < count; index++) to[index] = from[index];
}

static uint32_t crc32c_table[256];

static void crc32c_make_table(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        crc32c_table[byte] = crc;
    }
}

#if defined(__x86_64__)
#include <cpuid.h>

/// Whether the processor has SSE 4.2's crc32 instruction: asked with `cpuid` (leaf 1, ECX bit 20),
/// not `__builtin_cpu_supports`, whose `__cpu_model` Apple's toolchain does not provide (an
/// x86_64 Mac or simulator slice would fail to link).
static int crc32c_hardware_present(void) {
    static int known = -1;  // racy by design: every thread computes the same answer
    int answer = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (answer < 0) {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        answer = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 20)) ? 1 : 0;
        __atomic_store_n(&known, answer, __ATOMIC_RELAXED);
    }
    return answer;
}

// SSE 4.2 has an instruction for it (every x86-64 processor since 2008); checked at run time.
__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *bytes,
                                                                   size_t count) {
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = (uint32_t)__builtin_ia32_crc32di(crc, word);
        bytes += 8;
        count -= 8;
    }
    while (count--) crc = __builtin_ia32_crc32qi(crc, *bytes++);
    return crc;
}
#endif

int prefs_crc32c_uses_hardware(void) {
#if defined(__x86_64__)
    return crc32c_hardware_present();
#else
    return 0;
#endif
}

uint32_t prefs_crc32c(const void *bytes, size_t count) {
#if defined(__x86_64__)
    if (crc32c_hardware_present()) return ~crc32c_hardware(0xFFFFFFFFu, (const unsigned char *)bytes, count);
#endif
    return prefs_crc32c_portable(bytes, count);
}

uint32_t prefs_crc32c_portable(const void *bytes, size_t count) {
    const unsigned char *next = (const unsigned char *)bytes;
    uint32_t crc = 0xFFFFFFFFu;
    static int made = 0;
    if (!__atomic_load_n(&made, __ATOMIC_ACQUIRE)) {
        crc32c_make_table();  // idempotent: two threads making it at once write the same values
        __atomic_store_n(&made, 1, __ATOMIC_RELEASE);
    }
    while (count--) crc = (crc >> 8) ^ crc32c_table[(crc ^ *next++) & 0xFFu];
    return ~crc;
}

void prefs_mutex_lock_contended(prefs_mutex *mutex) {
#if defined(__APPLE__)
    os_unfair_lock_lock(&mutex->lock);  // not reached: prefs_mutex_lock calls it directly
#else
    // A holder usually lets go within a few hundred nanoseconds: spin a little before sleeping.
    for (int spin = 0; spin < 100; spin++) {
        uint32_t expected = 0;
        if (__atomic_load_n(&mutex->state, __ATOMIC_RELAXED) == 0
            && __atomic_compare_exchange_n(&mutex->state, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            return;
        }
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
    // Marked 2 ("someone may sleep"), so the holder's unlock wakes a sleeper; whoever takes the
    // lock from here keeps the mark, which costs at most one needless wake.
    while (__atomic_exchange_n(&mutex->state, 2, __ATOMIC_ACQUIRE) != 0) {
#if defined(__linux__)
        syscall(SYS_futex, &mutex->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
#else
        sched_yield();
#endif
    }
#endif
}

void prefs_mutex_wake(prefs_mutex *mutex) {
#if defined(__linux__)
    syscall(SYS_futex, &mutex->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)mutex;
#endif
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

int prefs_lock_kind_of_process(void) {
#if defined(__APPLE__)
    return PREFS_LOCK_KIND_FLOCK;
#else
    const char *asked = getenv("PREFS_JOURNAL_LOCK");
    return asked && strcmp(asked, "flock") == 0 ? PREFS_LOCK_KIND_FLOCK : PREFS_LOCK_KIND_NATIVE;
#endif
}

int prefs_lock_kind_is_available(int kind) {
#if defined(__linux__)
    return kind == PREFS_LOCK_KIND_NATIVE || kind == PREFS_LOCK_KIND_FLOCK;
#elif defined(__APPLE__)
    return kind == PREFS_LOCK_KIND_FLOCK || kind == PREFS_LOCK_KIND_NATIVE;  // both mean flock here
#else
    (void)kind;
    return 0;
#endif
}

// MARK: - The thread lock

// A waiter lends the holder its priority, so a main-thread write waiting behind a background
// checkpoint (msync, then F_FULLFSYNC) is not held up by work of middling priority:
// - Linux: the lock is a priority-inheriting mutex (`PTHREAD_PRIO_INHERIT`, a PI futex), waited
//   for with `pthread_mutex_timedlock`; CI runs it (PREFS_JOURNAL_LOCK=flock) and a test makes
//   the inversion happen with real-time priorities.
// - Apple platforms: a condition variable, while waiting on which the waiter overrides the
//   holder's quality of service with its own (`pthread_override_qos_class_start_np`, meant for a
//   thread "blocked waiting on a resource held by the target thread"). Verified by reading.
struct prefs_thread_lock {
#if defined(__linux__)
    pthread_mutex_t held;
    uintptr_t holder;  // the holding thread, 0 when free; atomic
#else
    pthread_mutex_t mutex;
    pthread_cond_t released;
    int held;
    pthread_t holder;
#endif
};

prefs_thread_lock *prefs_thread_lock_create(void) {
    prefs_thread_lock *lock = calloc(1, sizeof *lock);
    if (!lock) return NULL;
#if defined(__linux__)
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    // Where the kernel has no PI futexes the lock still works, without lending priority.
    (void)pthread_mutexattr_setprotocol(&attributes, PTHREAD_PRIO_INHERIT);
    int failed = pthread_mutex_init(&lock->held, &attributes);
    pthread_mutexattr_destroy(&attributes);
    if (failed != 0) {
        free(lock);
        return NULL;
    }
#else
    if (pthread_mutex_init(&lock->mutex, NULL) != 0) {
        free(lock);
        return NULL;
    }
    if (pthread_cond_init(&lock->released, NULL) != 0) {
        pthread_mutex_destroy(&lock->mutex);
        free(lock);
        return NULL;
    }
#endif
    return lock;
}

void prefs_thread_lock_destroy(prefs_thread_lock *lock) {
    if (!lock) return;
#if defined(__linux__)
    pthread_mutex_destroy(&lock->held);
#else
    pthread_cond_destroy(&lock->released);
    pthread_mutex_destroy(&lock->mutex);
#endif
    free(lock);
}

int prefs_thread_lock_is_held_by_caller(prefs_thread_lock *lock) {
#if defined(__linux__)
    // Only this thread writes its own identity there, so seeing it means holding the lock.
    return __atomic_load_n(&lock->holder, __ATOMIC_ACQUIRE) == (uintptr_t)pthread_self();
#else
    pthread_mutex_lock(&lock->mutex);
    int mine = lock->held && pthread_equal(lock->holder, pthread_self());
    pthread_mutex_unlock(&lock->mutex);
    return mine;
#endif
}

int prefs_thread_lock_lends_priority(prefs_thread_lock *lock) {
#if defined(__linux__)
    (void)lock;
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    int protocol = PTHREAD_PRIO_NONE;
    int works = pthread_mutexattr_setprotocol(&attributes, PTHREAD_PRIO_INHERIT) == 0
        && pthread_mutexattr_getprotocol(&attributes, &protocol) == 0 && protocol == PTHREAD_PRIO_INHERIT;
    pthread_mutexattr_destroy(&attributes);
    return works;
#elif defined(__APPLE__)
    (void)lock;
    return 1;
#else
    (void)lock;
    return 0;
#endif
}

/// The wall-clock instant `timeout_ms` from now (what `pthread_cond_timedwait` waits until; Apple
/// platforms have no monotonic condition variables, and one code path serves both).
static struct timespec deadline_after(int64_t timeout_ms) {
    // Never before now: a negative timeout would give a negative tv_nsec, which the timed waits
    // refuse with EINVAL instead of timing out.
    if (timeout_ms < 0) timeout_ms = 0;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    // In 64 bits, then clamped to what time_t holds (32 bits where long is, on a watch), so a
    // deadline never wraps into the past.
    int64_t seconds = (int64_t)deadline.tv_sec + timeout_ms / 1000;
    long nanoseconds = deadline.tv_nsec + (long)(timeout_ms % 1000) * 1000000L;
    if (nanoseconds >= 1000000000L) {
        seconds += 1;
        nanoseconds -= 1000000000L;
    }
    const int64_t largest = sizeof(time_t) == 4 ? INT32_MAX : INT64_MAX;
    deadline.tv_sec = (time_t)(seconds > largest ? largest : seconds);
    deadline.tv_nsec = nanoseconds;
    return deadline;
}

static int64_t milliseconds_until(struct timespec deadline) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    // Widened before subtracting: time_t has 32 bits on a watch.
    return ((int64_t)deadline.tv_sec - (int64_t)now.tv_sec) * 1000
        + ((int64_t)deadline.tv_nsec - (int64_t)now.tv_nsec) / 1000000;
}

static int thread_lock_acquire(prefs_thread_lock *lock, struct timespec deadline) {
#if defined(__linux__)
    if (prefs_thread_lock_is_held_by_caller(lock)) return PREFS_LOCK_WOULD_DEADLOCK;
    int result = pthread_mutex_timedlock(&lock->held, &deadline);
    if (result == ETIMEDOUT) return PREFS_LOCK_TIMED_OUT;
    if (result != 0) {
        errno = result;
        return PREFS_LOCK_FAILED;
    }
    __atomic_store_n(&lock->holder, (uintptr_t)pthread_self(), __ATOMIC_RELEASE);
    return PREFS_LOCK_ACQUIRED;
#else
    pthread_mutex_lock(&lock->mutex);
    if (lock->held && pthread_equal(lock->holder, pthread_self())) {
        pthread_mutex_unlock(&lock->mutex);
        return PREFS_LOCK_WOULD_DEADLOCK;
    }
    int outcome = PREFS_LOCK_ACQUIRED;
#if defined(__APPLE__)
    // The holder runs at this thread's quality of service while this thread waits for it.
    pthread_override_t override = NULL;
    pthread_t overridden = NULL;
#endif
    while (lock->held) {
#if defined(__APPLE__)
        if (!override || !pthread_equal(overridden, lock->holder)) {
            if (override) pthread_override_qos_class_end_np(override);
            overridden = lock->holder;
            override = pthread_override_qos_class_start_np(overridden, qos_class_self(), 0);
        }
#endif
        // Any answer but a wake-up ends the wait when the lock is still held: a refused deadline
        // (EINVAL) must not turn the wait into a spin with no end.
        int waited = pthread_cond_timedwait(&lock->released, &lock->mutex, &deadline);
        if (waited != 0 && waited != EINTR && lock->held) {
            outcome = PREFS_LOCK_TIMED_OUT;
            break;
        }
    }
#if defined(__APPLE__)
    if (override) pthread_override_qos_class_end_np(override);
#endif
    if (outcome == PREFS_LOCK_ACQUIRED) {
        lock->held = 1;
        lock->holder = pthread_self();
    }
    pthread_mutex_unlock(&lock->mutex);
    return outcome;
#endif
}

static void thread_lock_release(prefs_thread_lock *lock) {
#if defined(__linux__)
    __atomic_store_n(&lock->holder, (uintptr_t)0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock->held);
#else
    pthread_mutex_lock(&lock->mutex);
    lock->held = 0;
    pthread_cond_signal(&lock->released);
    pthread_mutex_unlock(&lock->mutex);
#endif
}

/// `flock(LOCK_EX)` on the descriptor, tried until the deadline (no timed `flock` exists: try,
/// then sleep briefly, doubling the pause up to a millisecond).
static int flock_until(int descriptor, struct timespec deadline) {
    useconds_t pause_us = 20;
    while (flock(descriptor, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) return PREFS_LOCK_FAILED;
        if (milliseconds_until(deadline) <= 0) return PREFS_LOCK_TIMED_OUT;
        usleep(pause_us);
        if (pause_us < 1000) pause_us *= 2;
    }
    return PREFS_LOCK_ACQUIRED;
}

// MARK: - The journal's lock

int prefs_lock_init(void *memory) {
#if defined(__linux__)
    pthread_mutexattr_t attributes;
    int failure = pthread_mutexattr_init(&attributes);
    if (failure) return failure;
    // Shared between processes; robust, so a holder killed with kill -9 hands the lock on
    // (EOWNERDEAD) instead of leaving it held forever; error-checking, so a thread that asks
    // again for a lock it holds is told so instead of waiting for itself.
    if (!(failure = pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED)) &&
        !(failure = pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST)) &&
        !(failure = pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_ERRORCHECK))) {
        failure = pthread_mutex_init((pthread_mutex_t *)memory, &attributes);
    }
    pthread_mutexattr_destroy(&attributes);
    return failure;
#else
    (void)memory;
    return ENOTSUP;
#endif
}

_Static_assert(sizeof(((prefs_journal_header *)0)->lock) >= 128, "room for the lock");
#if defined(__linux__)
_Static_assert(sizeof(pthread_mutex_t) <= 128, "a pthread mutex fits the header's lock field");
#endif

#if defined(__linux__)
/// An OFD lock on one byte: `type` F_RDLCK, F_WRLCK or F_UNLCK; waits when `wait`.
static int ofd_lock(int descriptor, short type, off_t byte, int wait) {
    struct flock lock = {.l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1, .l_pid = 0};
    int result;
    do {
        result = fcntl(descriptor, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock);
    } while (result != 0 && errno == EINTR);
    return result;
}
#endif

/// Whether opening is serialized by an OFD lock of its own (Linux with its native lock), rather
/// than by the journal's lock as on Apple platforms (and on Linux under PREFS_JOURNAL_LOCK=flock,
/// so CI runs Apple's opening path too).
static int opening_has_its_own_lock(void) {
#if defined(__linux__)
    return prefs_lock_kind_of_process() == PREFS_LOCK_KIND_NATIVE;
#else
    return 0;
#endif
}

int prefs_open_begin(int descriptor, prefs_thread_lock *thread, int64_t timeout_ms) {
#if defined(__linux__)
    if (!opening_has_its_own_lock()) return prefs_lock_acquire(PREFS_LOCK_KIND_FLOCK, NULL, thread, descriptor, timeout_ms);
    struct timespec deadline = deadline_after(timeout_ms);
    useconds_t pause_us = 20;
    while (ofd_lock(descriptor, F_WRLCK, 0, 0) != 0) {
        if (errno != EAGAIN && errno != EACCES) return PREFS_LOCK_FAILED;
        if (milliseconds_until(deadline) <= 0) return PREFS_LOCK_TIMED_OUT;
        usleep(pause_us);
        if (pause_us < 1000) pause_us *= 2;
    }
    return PREFS_LOCK_ACQUIRED;
#else
    return prefs_lock_acquire(PREFS_LOCK_KIND_FLOCK, NULL, thread, descriptor, timeout_ms);
#endif
}

void prefs_open_end(int descriptor, prefs_thread_lock *thread) {
#if defined(__linux__)
    if (!opening_has_its_own_lock()) {
        prefs_lock_release(PREFS_LOCK_KIND_FLOCK, NULL, thread, descriptor);
        return;
    }
    ofd_lock(descriptor, F_UNLCK, 0, 0);
#else
    prefs_lock_release(PREFS_LOCK_KIND_FLOCK, NULL, thread, descriptor);
#endif
}

int prefs_open_is_sole_user(int descriptor) {
#if defined(__linux__)
    if (!opening_has_its_own_lock()) return 0;  // as on Apple platforms
    // Every user holds byte 1 shared for as long as its descriptor is open; taking it exclusively
    // succeeds only for the first. Either way this opener then holds it shared.
    int sole = ofd_lock(descriptor, F_WRLCK, 1, 0) == 0;
    ofd_lock(descriptor, F_RDLCK, 1, 1);
    return sole;
#else
    (void)descriptor;
    return 0;
#endif
}

int prefs_lock_is_sane(const void *memory) {
#if defined(__linux__) && defined(__GLIBC__)
    pthread_mutex_t reference;
    if (prefs_lock_init(&reference) != 0) return 1;
    int expected = reference.__data.__kind;
    pthread_mutex_destroy(&reference);
    int found;
    memcpy(&found, (const char *)memory + offsetof(pthread_mutex_t, __data.__kind), sizeof found);
    return found == expected;
#else
    (void)memory;
    return 1;
#endif
}

#if defined(__linux__)
/// How many times a writer looks at a held journal lock before it sleeps in the kernel.
///
/// A holder keeps the lock for about a microsecond (one record appended). Sleeping on it and being
/// woken by the holder's unlock costs several system calls and a trip through the scheduler, during
/// which the holder often takes the lock again. Four processes writing one store finished about a
/// fifth sooner here with 200 looks (a few microseconds) than with none.
enum { NATIVE_LOCK_SPINS = 200 };

static int native_lock_acquire(pthread_mutex_t *mutex, int64_t timeout_ms) {
    int result = pthread_mutex_trylock(mutex);
    for (int spin = 0; result == EBUSY && spin < NATIVE_LOCK_SPINS; spin++) {
#if defined(__GLIBC__)
        // Watched without writing (a failed trylock writes the lock's cache line, slowing the
        // holder), and tried again only once it looks free.
        if (__atomic_load_n(&mutex->__data.__lock, __ATOMIC_RELAXED) != 0) {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            __asm__ __volatile__("yield");
#endif
            continue;
        }
#endif
        result = pthread_mutex_trylock(mutex);
    }
    if (result == EBUSY) {
        struct timespec deadline = deadline_after(timeout_ms);
        result = pthread_mutex_timedlock(mutex, &deadline);
    }
    switch (result) {
    case 0: return PREFS_LOCK_ACQUIRED;
    case EOWNERDEAD:
        pthread_mutex_consistent(mutex);
        return PREFS_LOCK_ACQUIRED_OWNER_DIED;
    case ETIMEDOUT: return PREFS_LOCK_TIMED_OUT;
    case EDEADLK: return PREFS_LOCK_WOULD_DEADLOCK;
    default: errno = result; return PREFS_LOCK_FAILED;
    }
}
#endif

int prefs_lock_acquire(int kind, void *memory, prefs_thread_lock *thread, int descriptor, int64_t timeout_ms) {
#if defined(__linux__)
    if (kind == PREFS_LOCK_KIND_NATIVE) return native_lock_acquire((pthread_mutex_t *)memory, timeout_ms);
#endif
    (void)memory;
    if (!thread) {
        errno = EINVAL;
        return PREFS_LOCK_FAILED;
    }
    // First the threads of this process, then the processes: `flock` belongs to the open file
    // description, so without the thread lock two threads (a writer and a checkpoint) would both
    // "hold" it, and the first to let go would release it for everyone. The kernel releases a
    // dead holder's `flock`; the header's `writing` mark and odd generation tell the next holder
    // to check the records.
    struct timespec deadline = deadline_after(timeout_ms);
    int outcome = thread_lock_acquire(thread, deadline);
    if (outcome != PREFS_LOCK_ACQUIRED) return outcome;
    outcome = flock_until(descriptor, deadline);
    if (outcome != PREFS_LOCK_ACQUIRED) {
        int saved = errno;
        thread_lock_release(thread);
        errno = saved;
    }
    return outcome;
}

void prefs_lock_release(int kind, void *memory, prefs_thread_lock *thread, int descriptor) {
#if defined(__linux__)
    if (kind == PREFS_LOCK_KIND_NATIVE) {
        pthread_mutex_unlock((pthread_mutex_t *)memory);
        return;
    }
#endif
    (void)memory;
    flock(descriptor, LOCK_UN);
    if (thread) thread_lock_release(thread);
}

/// The call `call`, made again while a signal interrupts it (EINTR), as every system call of the
/// engine is (the Swift side's `SystemCall` does the same).
#define PREFS_RETRYING(result, call) \
    do {                             \
        (result) = (call);           \
    } while ((result) != 0 && errno == EINTR)

int prefs_sync_file(int descriptor) {
    int result;
#if defined(__APPLE__)
    PREFS_RETRYING(result, fcntl(descriptor, F_FULLFSYNC));
    if (result == 0) return 0;
    PREFS_RETRYING(result, fsync(descriptor));  // file systems without F_FULLFSYNC
#elif defined(__linux__)
    PREFS_RETRYING(result, fdatasync(descriptor));
#else
    PREFS_RETRYING(result, fsync(descriptor));
#endif
    return result;
}

/// Whether `prefs_sync_mapped` writes the mapped pages back with `msync` before syncing the file:
/// always on Apple platforms; on Linux, where `fdatasync` already writes back a file's mapped
/// pages (and `msync(MS_SYNC)` is itself a sync of the range, so it would double the flushes),
/// only when the environment asks for Apple's sequence (`PREFS_JOURNAL_SYNC=msync`, for tests).
static int syncs_mapping_first(void) {
#if defined(__APPLE__)
    return 1;
#else
    static int asked = -1;
    if (asked < 0) {
        const char *value = getenv("PREFS_JOURNAL_SYNC");
        asked = value && strcmp(value, "msync") == 0;
    }
    return asked;
#endif
}

int prefs_sync_mapped(void *mapping, size_t start, size_t count, int descriptor) {
    if (!syncs_mapping_first()) return prefs_sync_file(descriptor);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    // The header's page (where the records end and their numbers), unless the range holds it.
    int result;
    if (start >= page) {
        PREFS_RETRYING(result, msync(mapping, page, MS_SYNC));
        if (result != 0) return -1;
    }
    if (count > 0) {
        size_t first = start - start % page;
        PREFS_RETRYING(result, msync((char *)mapping + first, start + count - first, MS_SYNC));
        if (result != 0) return -1;
    }
    return prefs_sync_file(descriptor);
}

int prefs_open_path_only(const char *path) {
#if defined(__linux__)
    return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#else
    (void)path;
    errno = ENOTSUP;
    return -1;
#endif
}

// MARK: - SIGBUS guard

enum { SIGBUS_GUARD_SLOTS = 256 };

/// The guarded ranges. Read by the signal handler without a lock: each slot's fields are atomic,
/// `start` is written last when a slot is filled and first when it is emptied.
static struct {
    uintptr_t start;
    size_t length;
    uint32_t *cut;
} guarded[SIGBUS_GUARD_SLOTS];
static pthread_mutex_t guard_slots = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous_sigbus;
static pthread_once_t guard_installed = PTHREAD_ONCE_INIT;

static void sigbus_handler(int signal_number, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int slot = 0; slot < SIGBUS_GUARD_SLOTS; slot++) {
        uintptr_t start = __atomic_load_n(&guarded[slot].start, __ATOMIC_ACQUIRE);
        size_t length = __atomic_load_n(&guarded[slot].length, __ATOMIC_ACQUIRE);
        if (start == 0 || address < start || address >= start + length) continue;
        uintptr_t page = address & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
        // mmap is async-signal-safe in practice on Linux and Darwin (a system call).
        if (mmap((void *)page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
                 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
            break;
        }
        uint32_t *cut = __atomic_load_n(&guarded[slot].cut, __ATOMIC_ACQUIRE);
        if (cut) __atomic_store_n(cut, 1, __ATOMIC_SEQ_CST);
        return;
    }
    // Not ours: whoever handled SIGBUS before.
    if (previous_sigbus.sa_flags & SA_SIGINFO) {
        previous_sigbus.sa_sigaction(signal_number, info, context);
    } else if (previous_sigbus.sa_handler != SIG_DFL && previous_sigbus.sa_handler != SIG_IGN) {
        previous_sigbus.sa_handler(signal_number);
    } else {
        signal(signal_number, SIG_DFL);
        raise(signal_number);
    }
}

static void install_sigbus_guard(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = sigbus_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_sigbus);
}

int prefs_sigbus_guard_add(void *start, size_t length, uint32_t *cut) {
    pthread_once(&guard_installed, install_sigbus_guard);
    pthread_mutex_lock(&guard_slots);
    int result = -1;
    for (int slot = 0; slot < SIGBUS_GUARD_SLOTS; slot++) {
        if (__atomic_load_n(&guarded[slot].start, __ATOMIC_ACQUIRE) != 0) continue;
        __atomic_store_n(&guarded[slot].length, length, __ATOMIC_RELEASE);
        __atomic_store_n(&guarded[slot].cut, cut, __ATOMIC_RELEASE);
        __atomic_store_n(&guarded[slot].start, (uintptr_t)start, __ATOMIC_RELEASE);
        result = 0;
        break;
    }
    pthread_mutex_unlock(&guard_slots);
    return result;
}

void prefs_sigbus_guard_remove(void *start) {
    pthread_mutex_lock(&guard_slots);
    for (int slot = 0; slot < SIGBUS_GUARD_SLOTS; slot++) {
        if (__atomic_load_n(&guarded[slot].start, __ATOMIC_ACQUIRE) == (uintptr_t)start) {
            __atomic_store_n(&guarded[slot].start, 0, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&guard_slots);
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
