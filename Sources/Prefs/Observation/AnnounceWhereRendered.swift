import Dispatch

/// Runs `announce` — Observation's "this property changed", for a change another handle, process
/// or machine made — where SwiftUI can take it: on the main queue where SwiftUI exists (it expects
/// the changes it renders from on the main actor), at once elsewhere.
///
/// ```swift
/// announceWhereRendered { print("volume changed") }
/// ```
func announceWhereRendered(_ announce: @escaping @Sendable () -> Void) {
    #if canImport(SwiftUI)
        DispatchQueue.main.async(execute: announce)
    #else
        announce()
    #endif
}
