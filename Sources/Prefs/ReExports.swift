// The values, keys, changes, transactions and errors every store speaks are defined below the
// stores (and below the SQLite store's engine, which caches values) in `PrefsModel`; to a user
// they are `Prefs`' own types, as if defined here.
@_exported import PrefsModel
