// What Swift cannot say about memory that several processes map: atomics on raw words of the
// SQLite store's journal, futex waits, a lock that survives its holder being killed, a copy
// that may race with a writer by design, and notify(3). These few functions are the whole of it.
#ifndef PREFS_SHARED_H
#define PREFS_SHARED_H

#include <stddef.h>
#include <stdint.h>

#if defined(__APPLE__)
#include <os/lock.h>
#endif

// MARK: - A lock between the threads of one process

/// A lock between the threads of one process, as cheap as a lock can be when nobody else holds
/// it: one atomic instruction to take it and one to give it back, both inlined into the caller
/// (a store's read path takes one per read). Zeroed memory is an unlocked lock; it must not move
/// while in use. `os_unfair_lock` on Apple platforms; elsewhere a futex word holding 0 (free), 1
/// (held) or 2 (held, someone may sleep on it).
typedef struct prefs_mutex {
#if defined(__APPLE__)
    os_unfair_lock lock;
#else
    uint32_t state;
#endif
} prefs_mutex;

/// Waits for a held lock (the contended path of `prefs_mutex_lock`).
void prefs_mutex_lock_contended(prefs_mutex *mutex);

/// Wakes one thread sleeping on the lock (the contended path of `prefs_mutex_unlock`).
void prefs_mutex_wake(prefs_mutex *mutex);

/// Takes the lock, waiting while another thread holds it. Not recursive.
static inline void prefs_mutex_lock(prefs_mutex *mutex) {
#if defined(__APPLE__)
    os_unfair_lock_lock(&mutex->lock);
#else
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(&mutex->state, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        prefs_mutex_lock_contended(mutex);
    }
#endif
}

/// Gives the lock back (it must be held by the calling thread).
static inline void prefs_mutex_unlock(prefs_mutex *mutex) {
#if defined(__APPLE__)
    os_unfair_lock_unlock(&mutex->lock);
#else
    if (__atomic_exchange_n(&mutex->state, 0, __ATOMIC_RELEASE) == 2) prefs_mutex_wake(mutex);
#endif
}

// MARK: - Memory shared between processes

/// The word's value (sequentially consistent).
uint32_t prefs_atomic_load(const uint32_t *word);

/// Adds one to the word and returns the new value (sequentially consistent).
uint32_t prefs_atomic_increment(uint32_t *word);

/// Stores `value` and returns what the word held (sequentially consistent).
uint32_t prefs_atomic_exchange(uint32_t *word, uint32_t value);

/// Stores `value` (sequentially consistent).
void prefs_atomic_store(uint32_t *word, uint32_t value);

/// A 64-bit word's value, with acquire order: what was written before its release store is seen.
/// Inline: a store's read path loads the journal's sequence number on every read.
static inline uint64_t prefs_atomic_load64(const uint64_t *word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

/// Stores a 64-bit word with release order: everything written before is seen by an acquire load.
static inline void prefs_atomic_store64(uint64_t *word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

/// A 64-bit word's value with no ordering (a sequence lock's data: checked afterwards).
static inline uint64_t prefs_atomic_load64_relaxed(const uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_RELAXED);
}

/// Stores a 64-bit word with no ordering (a sequence lock's data, between its fences).
static inline void prefs_atomic_store64_relaxed(uint64_t *word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELAXED);
}

/// Orders the loads before it before the loads and stores after it (a sequence lock's reader,
/// between reading the data and reading the sequence again).
static inline void prefs_atomic_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }

/// Orders the loads and stores before it before the stores after it (a sequence lock's writer,
/// between marking the sequence odd and writing the data).
static inline void prefs_atomic_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }

/// A full memory fence.
void prefs_atomic_fence(void);

/// Copies bytes that another process may be overwriting at the same moment (a reader checks
/// afterwards, by the journal's generation, whether they were stable). Not instrumented by
/// ThreadSanitizer: the race is the design, and the check after it makes it safe.
void prefs_racy_copy(void *destination, const void *source, size_t count);

/// CRC-32C (Castagnoli) of the bytes: the journal's record checksum.
uint32_t prefs_crc32c(const void *bytes, size_t count);

/// Linux: sleeps while the word still holds `expected`, at most `timeout_ms` milliseconds (a
/// futex on a shared mapping, woken by `prefs_futex_wake_all` from any process). Returns 0 when
/// woken or the value had changed, 1 on timeout, -1 elsewhere than Linux.
int prefs_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ms);

/// Linux: wakes every process and thread waiting on the word. Returns -1 elsewhere than Linux.
int prefs_futex_wake_all(uint32_t *word);

/// The bytes a cross-process lock needs in the shared mapping (at most 128).
size_t prefs_lock_size(void);

/// Makes the cross-process lock in `memory` (zeroed, in a shared mapping) ready for use. Linux: a
/// process-shared, robust, error-checking pthread mutex. Apple platforms: nothing, the lock is
/// `flock` on the journal's descriptor. Returns 0, or an errno value.
int prefs_lock_init(void *memory);

/// Whether the lock's memory still looks like what `prefs_lock_init` made (Linux with glibc: the
/// mutex's kind field; elsewhere always 1). A lock damaged into another kind would make glibc
/// abort, so a damaged one is made anew when the journal opens.
int prefs_lock_is_sane(const void *memory);

/// Serializes opening the journal among processes (one creates or repairs the header while the
/// others wait): Linux, a write lock on the file's first byte owned by this open file
/// description (`F_OFD_SETLKW`); Apple platforms, `flock` (which is the journal's lock there).
/// Then marks this opener as a user of the journal until its descriptor is closed.
void prefs_open_begin(int descriptor);

/// Ends what `prefs_open_begin` serialized (the user mark stays).
void prefs_open_end(int descriptor);

/// Linux: 1 when no other open file description uses the journal (checked with a lock on its
/// second byte that every user holds shared), so its lock may be made anew; 0 otherwise, and
/// always 0 elsewhere. Call between `prefs_open_begin` and `prefs_open_end`.
int prefs_open_is_sole_user(int descriptor);

/// The lock's outcomes.
enum {
    PREFS_LOCK_ACQUIRED = 0,
    /// Acquired, but its previous holder died holding it: the state it guards may be half-changed.
    PREFS_LOCK_ACQUIRED_OWNER_DIED = 1,
    PREFS_LOCK_TIMED_OUT = 2,
    /// This thread already holds it: waiting would never end.
    PREFS_LOCK_WOULD_DEADLOCK = 3,
    PREFS_LOCK_FAILED = 4,
};

/// Takes the cross-process lock, waiting at most `timeout_ms`. `descriptor` is this opener's own
/// descriptor of the journal (used on Apple platforms, where the lock is `flock`).
int prefs_lock_acquire(void *memory, int descriptor, int64_t timeout_ms);

/// Releases the lock taken by `prefs_lock_acquire`.
void prefs_lock_release(void *memory, int descriptor);

/// Syncs the file's data to the medium: `fdatasync` on Linux, `F_FULLFSYNC` on Apple platforms
/// (a plain `fsync` there leaves it in the drive's cache). Returns 0, or -1 with errno.
int prefs_sync_file(int descriptor);

/// Apple platforms: posts the notify(3) notification `name` to every process. Returns 0 on
/// success, -1 on failure or elsewhere than Apple platforms.
int prefs_notify_post(const char *name);

/// Apple platforms: registers for the notification `name`; each one posted makes the returned
/// descriptor readable (4 bytes per notification). Returns 0 on success, -1 otherwise.
int prefs_notify_register(const char *name, int *descriptor, int *token);

/// Apple platforms: ends a registration (closing its descriptor). Returns 0 on success.
int prefs_notify_cancel(int token);

#endif
