/// A type an app declares in one file and makes a preference in another (its settings file), as
/// `SwitchingAppsTests` does: `Sendable` here, where the type is declared, is what lets the
/// conformance to `PreferenceValue` live elsewhere.
enum ArticleTextSize: Int, Sendable {
    case small, medium, large
}
