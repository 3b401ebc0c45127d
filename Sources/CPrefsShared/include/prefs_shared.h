// What Swift cannot say about memory that several processes map: atomics on raw words of the
// SQLite store's journal, futex waits, a lock that survives its holder being killed, a copy
// that may race with a writer by design, and notify(3). These few functions are the whole of it.
#ifndef PREFS_SHARED_H
#define PREFS_SHARED_H

#include <stdbool.h>
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

/// Takes the lock if nobody holds it, without waiting: true when taken.
static inline bool prefs_mutex_trylock(prefs_mutex *mutex) {
#if defined(__APPLE__)
    return os_unfair_lock_trylock(&mutex->lock);
#else
    uint32_t expected = 0;
    return __atomic_compare_exchange_n(&mutex->state, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
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

/// Adds `delta` (wrapping) to a 64-bit word and returns the new value (sequentially consistent).
/// With the two below, what `AtomicWord` needs: `Synchronization.Atomic` is above the package's
/// Apple floor (macOS 15, iOS 18), so the library's own atomics are C's.
static inline uint64_t prefs_atomic_add64(uint64_t *word, uint64_t delta) {
    return __atomic_add_fetch(word, delta, __ATOMIC_SEQ_CST);
}

/// Subtracts `delta` (wrapping) from a 64-bit word and returns the new value (sequentially
/// consistent).
static inline uint64_t prefs_atomic_subtract64(uint64_t *word, uint64_t delta) {
    return __atomic_sub_fetch(word, delta, __ATOMIC_SEQ_CST);
}

/// Stores `desired` when the word holds `expected` (acquire and release); returns 1 when it did.
static inline int prefs_atomic_compare_exchange64(uint64_t *word, uint64_t expected, uint64_t desired) {
    return __atomic_compare_exchange_n(word, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/// Asks the processor to bring the cache line at `address` in, for writing, without waiting
/// for it (a hint: never faults, whatever the address).
static inline void prefs_prefetch_for_write(const void *address) { __builtin_prefetch(address, 1, 3); }

/// Copies bytes that another process may be overwriting at the same moment (a reader checks
/// afterwards, by the journal's generation, whether they were stable). Not instrumented by
/// ThreadSanitizer: the race is the design, and the check after it makes it safe.
void prefs_racy_copy(void *destination, const void *source, size_t count);

/// CRC-32C (Castagnoli) of the bytes: the journal's record checksum.
uint32_t prefs_crc32c(const void *bytes, size_t count);

/// The same CRC from a table, whatever the processor (what `prefs_crc32c` falls back to).
uint32_t prefs_crc32c_portable(const void *bytes, size_t count);

/// 1 when `prefs_crc32c` uses the processor's crc32 instruction (x86-64 with SSE 4.2).
int prefs_crc32c_uses_hardware(void);

/// Linux: sleeps while the word still holds `expected`, at most `timeout_ms` milliseconds (a
/// futex on a shared mapping, woken by `prefs_futex_wake_all` from any process). Returns 0 when
/// woken or the value had changed, 1 on timeout, -1 elsewhere than Linux.
int prefs_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ms);

/// Linux: wakes every process and thread waiting on the word. Returns -1 elsewhere than Linux.
int prefs_futex_wake_all(uint32_t *word);

// MARK: - The journal's header

/// The first bytes of the SQLite store's journal (`<name>-prefs`), as every process maps them.
/// Little-endian, the layout fixed by the assertions below (the design document's table is
/// checked against them by a test). Fields marked "atomic" are only ever read and written through
/// the atomic functions above; the rest are written while opening, under the opening lock.
typedef struct prefs_journal_header {
    uint8_t magic[8];             // "PrefsJnl"
    uint32_t version;             // the format version
    uint32_t reserved_12;
    uint32_t counter;             // atomic: one more per record; the futex word watchers sleep on
    uint32_t sleepers;            // atomic: non-zero while a watcher asked to be woken
    uint32_t writing;             // atomic: set while a writer copies a record
    uint32_t lock_kind;           // which lock the processes use (PREFS_LOCK_KIND_*)
    uint64_t sequence;            // atomic: the last record's number
    uint64_t write_offset;        // atomic: where the records end
    uint64_t base_sequence;       // atomic: records up to it were moved into SQLite and dropped
    uint64_t generation;          // atomic: odd while records are moved inside the file
    uint64_t file_size;           // atomic: the size writers grew the file to
    uint64_t move_from;           // atomic: a move of records in progress: from where,
    uint64_t move_length;         //   how many bytes,
    uint64_t move_base;           //   the base sequence number it sets,
    uint32_t move_checksum;       //   and the CRC-32C of the bytes moved (0 with no move)
    uint32_t power_safe_writers;  // atomic: non-zero once a `.powerSafe` store wrote: moves are synced
    uint64_t database_id;         // the identity of the database the journal belongs to (0: any)
    uint64_t database_id_copy;    // the same again: one damaged copy is told from another database's
    uint8_t reserved_120[8];
    _Alignas(16) uint8_t lock[128];  // the robust mutex (PREFS_LOCK_KIND_NATIVE on Linux)
} prefs_journal_header;

_Static_assert(offsetof(prefs_journal_header, magic) == 0, "magic");
_Static_assert(offsetof(prefs_journal_header, version) == 8, "version");
_Static_assert(offsetof(prefs_journal_header, counter) == 16, "counter");
_Static_assert(offsetof(prefs_journal_header, sleepers) == 20, "sleepers");
_Static_assert(offsetof(prefs_journal_header, writing) == 24, "writing");
_Static_assert(offsetof(prefs_journal_header, lock_kind) == 28, "lock_kind");
_Static_assert(offsetof(prefs_journal_header, sequence) == 32, "sequence");
_Static_assert(offsetof(prefs_journal_header, write_offset) == 40, "write_offset");
_Static_assert(offsetof(prefs_journal_header, base_sequence) == 48, "base_sequence");
_Static_assert(offsetof(prefs_journal_header, generation) == 56, "generation");
_Static_assert(offsetof(prefs_journal_header, file_size) == 64, "file_size");
_Static_assert(offsetof(prefs_journal_header, move_from) == 72, "move_from");
_Static_assert(offsetof(prefs_journal_header, move_length) == 80, "move_length");
_Static_assert(offsetof(prefs_journal_header, move_base) == 88, "move_base");
_Static_assert(offsetof(prefs_journal_header, move_checksum) == 96, "move_checksum");
_Static_assert(offsetof(prefs_journal_header, power_safe_writers) == 100, "power_safe_writers");
_Static_assert(offsetof(prefs_journal_header, database_id) == 104, "database_id");
_Static_assert(offsetof(prefs_journal_header, database_id_copy) == 112, "database_id_copy");
_Static_assert(offsetof(prefs_journal_header, lock) == 128, "lock");
_Static_assert(sizeof(prefs_journal_header) == 256, "the header's fields fit in 256 bytes");

/// Each field's offset, as constants Swift imports (`MemoryLayout.offset(of:)` is computed at
/// run time, behind a once-only initialization every access would check).
enum {
    PREFS_JOURNAL_VERSION_OFFSET = offsetof(prefs_journal_header, version),
    PREFS_JOURNAL_COUNTER_OFFSET = offsetof(prefs_journal_header, counter),
    PREFS_JOURNAL_SLEEPERS_OFFSET = offsetof(prefs_journal_header, sleepers),
    PREFS_JOURNAL_WRITING_OFFSET = offsetof(prefs_journal_header, writing),
    PREFS_JOURNAL_LOCK_KIND_OFFSET = offsetof(prefs_journal_header, lock_kind),
    PREFS_JOURNAL_SEQUENCE_OFFSET = offsetof(prefs_journal_header, sequence),
    PREFS_JOURNAL_WRITE_OFFSET_OFFSET = offsetof(prefs_journal_header, write_offset),
    PREFS_JOURNAL_BASE_SEQUENCE_OFFSET = offsetof(prefs_journal_header, base_sequence),
    PREFS_JOURNAL_GENERATION_OFFSET = offsetof(prefs_journal_header, generation),
    PREFS_JOURNAL_FILE_SIZE_OFFSET = offsetof(prefs_journal_header, file_size),
    PREFS_JOURNAL_MOVE_FROM_OFFSET = offsetof(prefs_journal_header, move_from),
    PREFS_JOURNAL_MOVE_LENGTH_OFFSET = offsetof(prefs_journal_header, move_length),
    PREFS_JOURNAL_MOVE_BASE_OFFSET = offsetof(prefs_journal_header, move_base),
    PREFS_JOURNAL_MOVE_CHECKSUM_OFFSET = offsetof(prefs_journal_header, move_checksum),
    PREFS_JOURNAL_POWER_SAFE_WRITERS_OFFSET = offsetof(prefs_journal_header, power_safe_writers),
    PREFS_JOURNAL_DATABASE_ID_OFFSET = offsetof(prefs_journal_header, database_id),
    PREFS_JOURNAL_DATABASE_ID_COPY_OFFSET = offsetof(prefs_journal_header, database_id_copy),
    PREFS_JOURNAL_LOCK_OFFSET = offsetof(prefs_journal_header, lock),
};

// MARK: - The journal's lock

/// The journal lock's kinds, as the header's `lock_kind` says.
enum {
    /// The platform's own: a robust, process-shared, error-checking pthread mutex in the header
    /// on Linux; on Apple platforms (no robust mutexes), the same as `PREFS_LOCK_KIND_FLOCK`.
    PREFS_LOCK_KIND_NATIVE = 0,
    /// Apple's lock, on any platform: a thread lock per journal file shared by every store of the
    /// process, then `flock` on the store's descriptor (`PREFS_JOURNAL_LOCK=flock` on Linux).
    PREFS_LOCK_KIND_FLOCK = 1,
};

/// The kind this process uses: `PREFS_LOCK_KIND_FLOCK` on Apple platforms, and on Linux when the
/// environment has `PREFS_JOURNAL_LOCK=flock`; otherwise `PREFS_LOCK_KIND_NATIVE`.
int prefs_lock_kind_of_process(void);

/// Whether this platform can use the lock kind `kind` (Apple platforms have no robust mutex).
int prefs_lock_kind_is_available(int kind);

/// A lock between the threads of one process that knows its holder and gives up after a timeout:
/// `flock` belongs to an open file description, so every thread using a descriptor "holds" it at
/// once; this lock, one per journal file per process, is taken before it (as MMKV takes its
/// thread lock before its file lock). Made by `prefs_thread_lock_init`; it must not move.
typedef struct prefs_thread_lock prefs_thread_lock;

/// A new thread lock (`NULL` when memory or a mutex cannot be had).
prefs_thread_lock *prefs_thread_lock_create(void);

/// Frees a thread lock nobody holds.
void prefs_thread_lock_destroy(prefs_thread_lock *lock);

/// Whether the calling thread holds the thread lock.
int prefs_thread_lock_is_held_by_caller(prefs_thread_lock *lock);

/// 1 where a thread waiting for the lock lends its holder its priority (a priority-inheriting
/// mutex on Linux, a QoS override on Apple platforms), 0 where it cannot.
int prefs_thread_lock_lends_priority(prefs_thread_lock *lock);

/// Makes the cross-process lock in `memory` (zeroed, in a shared mapping) ready for use: a
/// process-shared, robust, error-checking pthread mutex. Linux only; elsewhere returns ENOTSUP.
/// Returns 0, or an errno value.
int prefs_lock_init(void *memory);

/// Whether the mutex's memory still looks like what `prefs_lock_init` made. With glibc, the
/// mutex's kind field: glibc aborts on a mutex damaged into another kind, so a damaged one is
/// made anew when the journal opens. This is the one private libc field the package reads; on
/// other libcs (and platforms without the native lock) it answers 1.
int prefs_lock_is_sane(const void *memory);

/// Serializes opening the journal among processes, waiting at most `timeout_ms`: one opener
/// creates or repairs the header while the others wait. Linux: a write lock on the journal's
/// first byte owned by this open file description (`F_OFD_SETLK`, polled). Apple platforms (no
/// OFD locks), and Linux under `PREFS_JOURNAL_LOCK=flock`: the journal's own lock, `thread` then
/// `flock`, which a writer holds too (so the caller waits for it only briefly, see
/// `Journal.open`). Returns a `PREFS_LOCK_*` outcome.
int prefs_open_begin(int descriptor, prefs_thread_lock *thread, int64_t timeout_ms);

/// Ends what `prefs_open_begin` serialized.
void prefs_open_end(int descriptor, prefs_thread_lock *thread);

/// Linux: 1 when no other open file description uses the journal (checked with a lock on its
/// second byte that every user holds shared), so its lock may be made anew; 0 otherwise, and
/// always 0 elsewhere (and under `PREFS_JOURNAL_LOCK=flock`, as on Apple platforms). Call
/// between `prefs_open_begin` and `prefs_open_end`.
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

/// Takes the journal's lock of kind `kind`, waiting at most `timeout_ms` in all.
///
/// `PREFS_LOCK_KIND_NATIVE` on Linux: the robust mutex at `memory`. `PREFS_LOCK_KIND_FLOCK`:
/// `thread` (the process's thread lock for this journal file) and then `flock` on `descriptor`
/// (this opener's own descriptor). On `PREFS_LOCK_FAILED`, errno says why.
int prefs_lock_acquire(int kind, void *memory, prefs_thread_lock *thread, int descriptor, int64_t timeout_ms);

/// Releases the lock taken by `prefs_lock_acquire` (the same arguments).
void prefs_lock_release(int kind, void *memory, prefs_thread_lock *thread, int descriptor);

/// Syncs the file's data to the medium: `fdatasync` on Linux, `F_FULLFSYNC` on Apple platforms
/// (a plain `fsync` there leaves it in the drive's cache). Returns 0, or -1 with errno.
int prefs_sync_file(int descriptor);

/// Syncs `count` bytes of a shared mapping from `start`, and its first page (the journal's
/// header), and then the file: `msync(MS_SYNC)` over the pages that hold them (on Apple
/// platforms the only call documented to write a mapping's pages back), then `prefs_sync_file`.
/// On Linux `fdatasync` alone writes back the mapped pages (and `msync(MS_SYNC)` would be a
/// second sync of its own), so the `msync` step runs there only with `PREFS_JOURNAL_SYNC=msync`
/// in the environment, which the tests use to check Apple's order. Returns 0, or -1 with errno.
int prefs_sync_mapped(void *mapping, size_t start, size_t count, int descriptor);

/// Linux: a descriptor of `path` that only names the file (`O_PATH | O_NOFOLLOW | O_CLOEXEC`):
/// `fstat` works on it, and it takes no part in POSIX record locks (closing it releases none of
/// SQLite's). Returns -1 with errno, and always -1 elsewhere.
int prefs_open_path_only(const char *path);

// MARK: - Events on a file

/// Linux: a new queue of file events (inotify, non-blocking, closed on exec), or -1 with errno
/// (and always -1 elsewhere).
int prefs_file_events_open(void);

/// Linux: adds to `queue` a watch of the very file `descriptor` is open on (an `O_PATH`
/// descriptor will do; the watch is added through `/proc/self/fd`, so no path is looked up
/// again), for the events that can take the file from its path: a link removed (`IN_ATTRIB`, as
/// on every link-count change), the file moved, the file deleted. Returns the watch, or -1 with
/// errno.
int prefs_file_events_watch(int queue, int descriptor);

/// Linux: removes a watch `prefs_file_events_watch` added. Returns 0, or -1 with errno.
int prefs_file_events_unwatch(int queue, int watch);

/// Linux: a poller (epoll, closed on exec) that is ready while events wait in `queue`, or -1
/// with errno.
int prefs_file_events_poller(int queue);

/// Whether events wait in the queue `poller` was made for: 0 when none do (nothing happened
/// since the last discard), 1 when some do, -1 with errno. Never waits.
int prefs_file_events_ready(int poller);

/// Reads and discards every event waiting in `queue`. Returns 1 when it read any, 0 when none
/// waited, or -1 with errno.
int prefs_file_events_discard(int queue);

// MARK: - A file cut short under its mapping

/// Guards `length` bytes of a shared mapping from `start` against SIGBUS: when another process
/// cuts the mapped file shorter, touching a page past its new end raises SIGBUS, which would kill
/// the process. Inside a guarded range the handler instead maps a private zero page over the
/// faulting one (the access then completes, reading zeros) and sets `*cut` to 1, so the owner
/// can refuse to use the mapping from then on. A SIGBUS elsewhere goes to the handler that was
/// there before (the Swift runtime's backtracer, or the default). Returns 0, or -1 when every
/// slot is taken (the range is then unguarded).
int prefs_sigbus_guard_add(void *start, size_t length, uint32_t *cut);

/// Stops guarding the range that starts at `start` (before it is unmapped).
void prefs_sigbus_guard_remove(void *start);

/// Apple platforms: posts the notify(3) notification `name` to every process. Returns 0 on
/// success, -1 on failure or elsewhere than Apple platforms.
int prefs_notify_post(const char *name);

/// Apple platforms: registers for the notification `name`; each one posted makes the returned
/// descriptor readable (4 bytes per notification). Returns 0 on success, -1 otherwise.
int prefs_notify_register(const char *name, int *descriptor, int *token);

/// Apple platforms: ends a registration (closing its descriptor). Returns 0 on success.
int prefs_notify_cancel(int token);

#endif
