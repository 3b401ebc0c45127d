import Foundation
import Prefs
import PrefsTestSupport

enum Theme: String, PreferenceValue, CaseIterable {
    case system, light, dark
}

enum Level: Int, PreferenceValue {
    case low = 1
    case high = 9
}

struct Profile: Codable, Equatable, PreferenceValue {
    var name: String
    var age: Int
    var nickname: String?
    var joined: Date
    var tags: [String]

    static let guest = Profile(
        name: "Guest", age: 0, nickname: nil, joined: Date(timeIntervalSince1970: 0), tags: [])
}

enum Shape: Codable, Equatable, PreferenceValue {
    case circle(radius: Double)
    case square(side: Int)
}

/// A type bridged by hand: three bytes of data.
struct RGB: PreferenceValue, Equatable {
    var red, green, blue: UInt8

    static func serialize(_ value: RGB) -> PropertyListValue? {
        .data(Data([value.red, value.green, value.blue]))
    }

    static func deserialize(_ stored: PropertyListValue) throws -> RGB {
        guard case .data(let bytes) = stored, bytes.count == 3 else {
            throw PreferenceError(.typeMismatch, "expected RGB, found \(stored)")
        }
        let b = Array(bytes)
        return RGB(red: b[0], green: b[1], blue: b[2])
    }
}
