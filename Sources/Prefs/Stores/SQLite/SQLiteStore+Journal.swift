import Foundation
import PrefsEngine

/// Where the store meets its engine (the `PrefsEngine` module): the journal's errors become
/// the store's, values go into records as their stored encoding, and the journal's notices go to
/// the store's diagnostics.
extension Journal {
    /// The reporter that hands the journal's notices to `diagnostics`.
    static func reporter(_ diagnostics: PreferenceDiagnostics) -> Reporter {
        { path, message in
            diagnostics.report(PreferenceIssue(key: "", store: path, kind: .storeNotice(message)))
        }
    }
}
