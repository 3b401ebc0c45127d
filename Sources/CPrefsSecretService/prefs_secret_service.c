// The Secret Service through libsecret, opened with dlopen on first use (see the header).
//
// libsecret's simple password calls are variadic, which Swift cannot call, and they unlock a
// locked keyring by showing a prompt, which a process without a display waits on or reads as
// "nothing stored". These calls use libsecret's service API instead, never asking to unlock:
// a locked keyring is reported as locked. The few declarations below are the parts of
// libsecret's, GLib's and GIO's interfaces they use, as those libraries' headers give them.
#if !defined(__APPLE__)

#include "prefs_secret_service.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct GError {
    unsigned int domain;
    int code;
    char *message;
} GError;
typedef struct GList {
    void *data;
    struct GList *next;
    struct GList *prev;
} GList;
typedef int gboolean;

/// The functions used, found in libsecret and the GLib and GIO it loads.
static struct {
    void *(*bus_get_sync)(int bus_type, void *cancellable, GError **error);
    void (*set_exit_on_close)(void *connection, gboolean exit_on_close);
    void (*proxy_set_default_timeout)(void *proxy, int timeout_msec);
    void *(*connection_call_sync)(
        void *connection, const char *bus_name, const char *object_path, const char *interface_name,
        const char *method_name, void *parameters, const void *reply_type, int flags, int timeout_msec,
        void *cancellable, GError **error);
    void (*variant_unref)(void *value);
    unsigned int (*io_error_quark)(void);
    void *(*hash_table_new)(unsigned int (*hash)(const void *), gboolean (*equal)(const void *, const void *));
    unsigned int (*str_hash)(const void *);
    gboolean (*str_equal)(const void *, const void *);
    gboolean (*hash_table_insert)(void *table, void *key, void *value);
    void *(*hash_table_lookup)(void *table, const void *key);
    void (*hash_table_unref)(void *table);
    void (*error_free)(GError *error);
    unsigned int (*dbus_error_quark)(void);
    void (*list_free_full)(GList *list, void (*free_function)(void *));
    void (*object_unref)(void *object);
    void *(*schema_newv)(const char *name, int flags, void *attribute_types);
    void *(*service_get_sync)(int flags, void *cancellable, GError **error);
    void (*service_disconnect)(void);
    GList *(*service_search_sync)(
        void *service, const void *schema, void *attributes, int flags, void *cancellable, GError **error);
    gboolean (*service_store_sync)(
        void *service, const void *schema, void *attributes, const char *collection, const char *label, void *value,
        void *cancellable, GError **error);
    gboolean (*service_clear_sync)(
        void *service, const void *schema, void *attributes, void *cancellable, GError **error);
    void *(*collection_for_alias_sync)(void *service, const char *alias, int flags, void *cancellable, GError **error);
    gboolean (*collection_get_locked)(void *collection);
    gboolean (*item_get_locked)(void *item);
    void *(*item_get_attributes)(void *item);
    gboolean (*item_delete_sync)(void *item, void *cancellable, GError **error);
    void *(*item_get_secret)(void *item);
    void *(*value_new)(const char *secret, long length, const char *content_type);
    const char *(*value_get)(void *value, size_t *length);
    void (*value_unref)(void *value);
} lib;

/// Why loading failed, or NULL once it succeeded.
static char *load_failure;
/// The schema of Prefs' items: the service (a domain), the account (a key) and the form of the
/// bytes. Matched by attributes alone (not by the schema's name), so an item another tool
/// stored with the same service and account (`secret-tool store service … account …`) is read.
static void *schema;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

enum {
    PREFS_SECRET_TIMEOUT_MS = 5000,
    IO_ERROR_TIMED_OUT = 24,
    BUS_SESSION = 2,
    SERVICE_OPEN_SESSION = 1 << 1,
    SEARCH_ALL = 1 << 1,
    SEARCH_LOAD_SECRETS = 1 << 3,
    SCHEMA_DONT_MATCH_NAME = 1 << 1,
    DBUS_SERVICE_UNKNOWN = 2,
    DBUS_NAME_HAS_NO_OWNER = 3,
    DBUS_NO_REPLY = 4,
    DBUS_DISCONNECTED = 15,
    DBUS_UNKNOWN_OBJECT = 41,
};

static char *copy_text(const char *text) {
    size_t length = strlen(text);
    char *copy = malloc(length + 1);
    if (copy) memcpy(copy, text, length + 1);
    return copy;
}

static char *formatted(const char *format, const char *detail) {
    size_t size = strlen(format) + strlen(detail) + 1;
    char *text = malloc(size);
    if (text) snprintf(text, size, format, detail);
    return text;
}

#define FIND(field, name)                                                                                   \
    do {                                                                                                    \
        *(void **)(&lib.field) = dlsym(handle, name);                                                      \
        if (!lib.field) {                                                                                   \
            load_failure = formatted("libsecret-1.so.0 has no %s (libsecret 0.19 or later is needed)", name); \
            return;                                                                                         \
        }                                                                                                   \
    } while (0)

static void load(void) {
    void *handle = dlopen("libsecret-1.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        load_failure = formatted(
            "libsecret is not installed (install libsecret-1-0, or your system's libsecret): %s", why ? why : "");
        return;
    }
    // dlsym on libsecret's handle also finds the GLib and GIO it depends on.
    FIND(bus_get_sync, "g_bus_get_sync");
    FIND(set_exit_on_close, "g_dbus_connection_set_exit_on_close");
    FIND(proxy_set_default_timeout, "g_dbus_proxy_set_default_timeout");
    FIND(connection_call_sync, "g_dbus_connection_call_sync");
    FIND(variant_unref, "g_variant_unref");
    FIND(io_error_quark, "g_io_error_quark");
    FIND(hash_table_new, "g_hash_table_new");
    FIND(str_hash, "g_str_hash");
    FIND(str_equal, "g_str_equal");
    FIND(hash_table_insert, "g_hash_table_insert");
    FIND(hash_table_lookup, "g_hash_table_lookup");
    FIND(hash_table_unref, "g_hash_table_unref");
    FIND(error_free, "g_error_free");
    FIND(dbus_error_quark, "g_dbus_error_quark");
    FIND(list_free_full, "g_list_free_full");
    FIND(object_unref, "g_object_unref");
    FIND(schema_newv, "secret_schema_newv");
    FIND(service_get_sync, "secret_service_get_sync");
    FIND(service_disconnect, "secret_service_disconnect");
    FIND(service_search_sync, "secret_service_search_sync");
    FIND(service_store_sync, "secret_service_store_sync");
    FIND(service_clear_sync, "secret_service_clear_sync");
    FIND(collection_for_alias_sync, "secret_collection_for_alias_sync");
    FIND(collection_get_locked, "secret_collection_get_locked");
    FIND(item_get_locked, "secret_item_get_locked");
    FIND(item_get_attributes, "secret_item_get_attributes");
    FIND(item_delete_sync, "secret_item_delete_sync");
    FIND(item_get_secret, "secret_item_get_secret");
    FIND(value_new, "secret_value_new");
    FIND(value_get, "secret_value_get");
    FIND(value_unref, "secret_value_unref");
    // Attribute types: a NULL value is SECRET_SCHEMA_ATTRIBUTE_STRING.
    void *types = lib.hash_table_new(lib.str_hash, lib.str_equal);
    lib.hash_table_insert(types, "service", NULL);
    lib.hash_table_insert(types, "account", NULL);
    lib.hash_table_insert(types, "form", NULL);
    schema = lib.schema_newv("org.prefs.Secret", SCHEMA_DONT_MATCH_NAME, types);
    lib.hash_table_unref(types);
}

/// The service's connection for this call (a new reference), or NULL with `*message` set.
///
/// The session bus is taken first, and told not to end the process when it closes: GLib's
/// shared connection raises SIGTERM when the bus goes away, and a library reading a secret
/// must not end the program that asked.
static void *connect_service(char **message) {
    GError *error = NULL;
    void *bus = lib.bus_get_sync(BUS_SESSION, NULL, &error);
    if (!bus) {
        *message = formatted(
            "no D-Bus session bus, which the Secret Service is reached over (DBUS_SESSION_BUS_ADDRESS is unset, "
            "or its bus is gone): %s",
            error ? error->message : "");
        if (error) lib.error_free(error);
        return NULL;
    }
    lib.set_exit_on_close(bus, 0);
    // One round trip with a bound first: a daemon that stopped answering would hold libsecret's
    // own first calls for D-Bus's 25 s each (50 s measured with the daemon stopped).
    void *pong = lib.connection_call_sync(
        bus, "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.DBus.Peer", "Ping", NULL,
        NULL, 0, PREFS_SECRET_TIMEOUT_MS, NULL, &error);
    lib.object_unref(bus);
    if (!pong) {
        int timed_out = error && error->domain == lib.io_error_quark() && error->code == IO_ERROR_TIMED_OUT;
        *message = formatted(
            timed_out ? "the Secret Service did not answer within 5 s (its daemon is stopped or too busy): %s"
                      : "nothing on the session bus provides the Secret Service (start gnome-keyring-daemon or KWallet): %s",
            error ? error->message : "");
        if (error) lib.error_free(error);
        return NULL;
    }
    lib.variant_unref(pong);
    void *service = lib.service_get_sync(SERVICE_OPEN_SESSION, NULL, &error);
    if (!service) {
        *message = formatted(
            "nothing on the session bus provides the Secret Service (start gnome-keyring-daemon or KWallet): %s",
            error ? error->message : "");
        if (error) lib.error_free(error);
        return NULL;
    }
    // A daemon that stopped answering (stopped, or its machine busy) is given a few seconds,
    // not D-Bus's 25: a read of a secret waits that long at most.
    lib.proxy_set_default_timeout(service, PREFS_SECRET_TIMEOUT_MS);
    return service;
}

/// Whether `error` says the service went away (its name has no owner now, or the bus closed).
static int service_went_away(const GError *error) {
    if (error->domain != lib.dbus_error_quark()) return 0;
    switch (error->code) {
    case DBUS_SERVICE_UNKNOWN:
    case DBUS_NAME_HAS_NO_OWNER:
    case DBUS_NO_REPLY:
    case DBUS_DISCONNECTED:
    case DBUS_UNKNOWN_OBJECT:
        return 1;
    default:
        return 0;
    }
}

/// Turns `error` into the call's failure and message, and frees it.
static prefs_secret_failure failed(GError *error, const char *during, char **message) {
    prefs_secret_failure kind = PREFS_SECRET_FAILED;
    if (!error) {
        *message = formatted("the Secret Service refused %s", during);
    } else {
        if (service_went_away(error)) {
            kind = PREFS_SECRET_GONE;
            // The next call connects again, to whatever provides the service then.
            lib.service_disconnect();
            *message = formatted("the Secret Service went away: %s", error->message);
        } else {
            *message = copy_text(error->message);
        }
        lib.error_free(error);
    }
    return kind;
}

static void *attributes_of(const char *service, const char *account, const char *form) {
    void *attributes = lib.hash_table_new(lib.str_hash, lib.str_equal);
    lib.hash_table_insert(attributes, (void *)"service", (void *)service);
    lib.hash_table_insert(attributes, (void *)"account", (void *)account);
    if (form) lib.hash_table_insert(attributes, (void *)"form", (void *)form);
    return attributes;
}

/// A copy of the item's `form` attribute ("" when it has none).
static char *form_of(void *item) {
    void *attributes = lib.item_get_attributes(item);
    const char *form = attributes ? lib.hash_table_lookup(attributes, "form") : NULL;
    char *copy = copy_text(form ? form : "");
    if (attributes) lib.hash_table_unref(attributes);
    return copy;
}

/// Loads libsecret and connects, or says why not.
static void *begin(char **message) {
    pthread_once(&loaded, load);
    if (load_failure) {
        *message = copy_text(load_failure);
        return NULL;
    }
    return connect_service(message);
}

/// The items of `service` and `account` (locked ones too: a search that unlocks would prompt).
static GList *search(void *connection, void *attributes, int load_secrets, GError **error) {
    return lib.service_search_sync(
        connection, schema, attributes, SEARCH_ALL | (load_secrets ? SEARCH_LOAD_SECRETS : 0), NULL, error);
}

static int any_locked(GList *items) {
    for (GList *item = items; item; item = item->next) {
        if (lib.item_get_locked(item->data)) return 1;
    }
    return 0;
}

prefs_secret_failure prefs_secret_lookup(
    const char *service, const char *account, unsigned char **bytes, size_t *length, char **form, int *found,
    char **message) {
    *found = 0;
    void *connection = begin(message);
    if (!connection) return PREFS_SECRET_UNAVAILABLE;
    void *attributes = attributes_of(service, account, NULL);
    GError *error = NULL;
    GList *items = search(connection, attributes, 1, &error);
    lib.hash_table_unref(attributes);
    lib.object_unref(connection);
    if (error) return failed(error, "a search", message);
    prefs_secret_failure result = PREFS_SECRET_OK;
    if (items && lib.item_get_locked(items->data)) {
        *message = copy_text("the keyring holding it is locked (unlock it, for example by logging in)");
        result = PREFS_SECRET_LOCKED;
    } else if (items) {
        void *value = lib.item_get_secret(items->data);
        if (!value) {
            *message = copy_text("the Secret Service gave the item without its secret");
            result = PREFS_SECRET_FAILED;
        } else {
            size_t size = 0;
            const char *data = lib.value_get(value, &size);
            *bytes = malloc(size ? size : 1);
            *form = form_of(items->data);
            if (!*bytes || !*form) {
                free(*bytes);
                free(*form);
                *message = copy_text("out of memory");
                result = PREFS_SECRET_FAILED;
            } else {
                memcpy(*bytes, data, size);
                *length = size;
                *found = 1;
            }
            lib.value_unref(value);
        }
    }
    if (items) lib.list_free_full(items, lib.object_unref);
    return result;
}

prefs_secret_failure prefs_secret_store(
    const char *service, const char *account, const char *form, const char *label, const unsigned char *bytes,
    size_t length, char **message) {
    void *connection = begin(message);
    if (!connection) return PREFS_SECRET_UNAVAILABLE;
    GError *error = NULL;
    prefs_secret_failure result = PREFS_SECRET_OK;
    // Storing into a locked keyring would ask to unlock it with a prompt nobody may see.
    void *collection = lib.collection_for_alias_sync(connection, "default", 0, NULL, &error);
    if (error) {
        lib.object_unref(connection);
        return failed(error, "finding the default keyring", message);
    }
    if (!collection) {
        *message = copy_text("the Secret Service has no default keyring to store it in");
        lib.object_unref(connection);
        return PREFS_SECRET_FAILED;
    }
    int locked = lib.collection_get_locked(collection);
    lib.object_unref(collection);
    if (locked) {
        *message = copy_text("the default keyring is locked (unlock it, for example by logging in)");
        lib.object_unref(connection);
        return PREFS_SECRET_LOCKED;
    }
    // An item of the same service and account but another form is not the one a store with
    // these attributes replaces: it is deleted, so that one item answers a lookup.
    void *any_form = attributes_of(service, account, NULL);
    GList *items = search(connection, any_form, 0, &error);
    lib.hash_table_unref(any_form);
    for (GList *item = items; item && !error; item = item->next) {
        char *existing = form_of(item->data);
        if (existing && strcmp(existing, form) != 0) lib.item_delete_sync(item->data, NULL, &error);
        free(existing);
    }
    if (items) lib.list_free_full(items, lib.object_unref);
    if (error) {
        lib.object_unref(connection);
        return failed(error, "replacing the item", message);
    }
    void *attributes = attributes_of(service, account, form);
    const char *content_type = strcmp(form, "text") == 0 ? "text/plain" : "application/octet-stream";
    void *value = lib.value_new((const char *)bytes, (long)length, content_type);
    if (!lib.service_store_sync(connection, schema, attributes, NULL, label, value, NULL, &error)) {
        result = failed(error, "storing the item", message);
    }
    lib.value_unref(value);
    lib.hash_table_unref(attributes);
    lib.object_unref(connection);
    return result;
}

prefs_secret_failure prefs_secret_clear(const char *service, const char *account, char **message) {
    void *connection = begin(message);
    if (!connection) return PREFS_SECRET_UNAVAILABLE;
    void *attributes = attributes_of(service, account, NULL);
    GError *error = NULL;
    prefs_secret_failure result = PREFS_SECRET_OK;
    GList *items = search(connection, attributes, 0, &error);
    if (error) {
        result = failed(error, "a search", message);
    } else if (any_locked(items)) {
        *message = copy_text("the keyring holding it is locked (unlock it, for example by logging in)");
        result = PREFS_SECRET_LOCKED;
    } else if (items && !lib.service_clear_sync(connection, schema, attributes, NULL, &error) && error) {
        result = failed(error, "deleting the item", message);
    }
    if (items) lib.list_free_full(items, lib.object_unref);
    lib.hash_table_unref(attributes);
    lib.object_unref(connection);
    return result;
}

void prefs_secret_disconnect(void) {
    pthread_once(&loaded, load);
    if (!load_failure) lib.service_disconnect();
}

#endif
