// The Secret Service (GNOME Keyring, KWallet) through libsecret, loaded when first used: a
// program that never reads a secret needs neither libsecret nor a session bus, and one that
// does without them gets an error that says which is missing. Linux and other non-Apple
// systems only (Apple platforms keep secrets in the Keychain).
#ifndef PREFS_SECRET_SERVICE_H
#define PREFS_SECRET_SERVICE_H

#include <stddef.h>

/// What went wrong, for the caller's error kind.
typedef enum prefs_secret_failure {
    /// Nothing: the call did what it was asked.
    PREFS_SECRET_OK = 0,
    /// No secret store to ask: libsecret is not installed, there is no session bus, or nothing
    /// on the bus provides the Secret Service (the daemon is not running, or went away).
    PREFS_SECRET_UNAVAILABLE = 1,
    /// The keyring holding the item (or the one a new item goes to) is locked.
    PREFS_SECRET_LOCKED = 2,
    /// Anything else the service answered.
    PREFS_SECRET_FAILED = 3,
    /// The service this process was talking to went away (its daemon ended or was replaced):
    /// the connection is forgotten, and a call made again connects to whoever provides the
    /// service now.
    PREFS_SECRET_GONE = 4,
} prefs_secret_failure;

/// The item of `service` and `account` (any item with these two attributes, whoever wrote it):
/// its bytes (`*bytes`, `*length`, freed with `free`) and its `form` attribute (`*form`, freed
/// with `free`; empty when it has none), or `*found == 0`. On failure returns the kind and sets
/// `*message` (freed with `free`).
prefs_secret_failure prefs_secret_lookup(
    const char *service, const char *account, unsigned char **bytes, size_t *length, char **form, int *found,
    char **message);

/// Stores `length` bytes as the item of `service` and `account` in the default keyring, with
/// the attribute `form` (what the bytes hold) and a label the keyring's own tools show,
/// replacing the item already there (one of another form is deleted first).
prefs_secret_failure prefs_secret_store(
    const char *service, const char *account, const char *form, const char *label, const unsigned char *bytes,
    size_t length, char **message);

/// Deletes the item of `service` and `account` (nothing to delete is no failure).
prefs_secret_failure prefs_secret_clear(const char *service, const char *account, char **message);

/// Forgets the connection to the service, so that the next call connects again (after the
/// daemon went away and another took its place).
void prefs_secret_disconnect(void);

#endif
