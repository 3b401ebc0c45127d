// A separate process for the tests: it writes or reads a value, through Prefs or through plain
// Foundation, and exits. Tests start it with an isolated XDG_CONFIG_HOME.
//
//   PrefsTestHelper store-write SUITE KEY TYPE VALUE    write through UserDefaultsStore
//   PrefsTestHelper plain-write SUITE KEY TYPE VALUE    write with plain UserDefaults + synchronize
//   PrefsTestHelper plain-read SUITE KEY TYPE           print what plain UserDefaults reads
//   PrefsTestHelper store-read SUITE KEY TYPE           print what UserDefaultsStore reads
//
// TYPE is string, int, double, bool or date (seconds since 1970).
import Foundation
import Prefs

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("PrefsTestHelper: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4 else { fail("usage: MODE SUITE KEY TYPE [VALUE]") }
let (mode, suite, key, type) = (arguments[0], arguments[1], arguments[2], arguments[3])
guard let defaults = UserDefaults(suiteName: suite) else { fail("no suite \(suite)") }
let prefs = Preferences(store: UserDefaultsStore(defaults, domainName: suite))

func parse(_ text: String) -> PropertyListValue {
    let value: PropertyListValue?
    switch type {
    case "string": value = .string(text)
    case "int": value = Int64(text).map(PropertyListValue.integer)
    case "double": value = Double(text).map(PropertyListValue.double)
    case "bool": value = Bool(text).map(PropertyListValue.bool)
    case "date": value = Double(text).map { .date(Date(timeIntervalSince1970: $0)) }
    default: fail("unknown type \(type)")
    }
    guard let value else { fail("not a \(type): \(text)") }
    return value
}

switch mode {
case "store-write":
    guard arguments.count == 5 else { fail("store-write needs a value") }
    do {
        try prefs.store.setValue(parse(arguments[4]), forKey: key)
    } catch {
        fail("\(error)")
    }
case "plain-write":
    guard arguments.count == 5 else { fail("plain-write needs a value") }
    defaults.set(parse(arguments[4]).foundationObject, forKey: key)
    guard defaults.synchronize() else { fail("synchronize failed") }
case "plain-read":
    switch type {
    case "string": print(defaults.string(forKey: key) ?? "<nil>")
    case "int": print(defaults.object(forKey: key) == nil ? "<nil>" : String(defaults.integer(forKey: key)))
    case "double": print(defaults.object(forKey: key) == nil ? "<nil>" : String(defaults.double(forKey: key)))
    case "bool": print(defaults.object(forKey: key) == nil ? "<nil>" : String(defaults.bool(forKey: key)))
    case "date":
        print((defaults.object(forKey: key) as? Date).map { String($0.timeIntervalSince1970) } ?? "<nil>")
    default: fail("unknown type \(type)")
    }
case "store-read":
    let value = prefs.store.value(forKey: key)
    switch (type, value) {
    case (_, nil): print("<nil>")
    case ("string", .string(let text)?): print(text)
    case ("int", .integer(let number)?): print(number)
    case ("double", .double(let number)?): print(number)
    case ("bool", .bool(let flag)?): print(flag)
    case ("date", .date(let date)?): print(date.timeIntervalSince1970)
    default: print("<mismatch: \(value.map(String.init(describing:)) ?? "nil")>")
    }
default:
    fail("unknown mode \(mode)")
}
