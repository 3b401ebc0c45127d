import Foundation

/// An error in the words a person acts on, for a message that already names the file: the
/// system's reason ("Not a directory", "Permission denied") rather than a dump of Foundation's
/// error (`Error Domain=NSCocoaErrorDomain Code=512 "(null)" UserInfo={…}`), which repeats the
/// path and says less.
///
/// ```swift
/// plainReason(of: POSIXError(.ENOTDIR))  // "Not a directory"
/// ```
package func plainReason(of error: any Error) -> String {
    switch error {
    case let error as StoreError: return error.description
    case let error as PreferenceError: return error.description
    default: break
    }
    let bridged = error as NSError
    if bridged.domain == NSPOSIXErrorDomain, let text = strerror(Int32(truncatingIfNeeded: bridged.code)) {
        return String(cString: text)
    }
    if let underlying = bridged.userInfo[NSUnderlyingErrorKey], let cause = underlying as? any Error {
        return plainReason(of: cause)
    }
    if bridged.domain == NSCocoaErrorDomain {
        switch CocoaError.Code(rawValue: bridged.code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return "No such file or directory"
        case .fileReadNoPermission, .fileWriteNoPermission: return "Permission denied"
        case .fileWriteOutOfSpace: return "No space left on device"
        case .fileWriteVolumeReadOnly: return "Read-only file system"
        case .fileWriteFileExists: return "File exists"
        default: break
        }
    }
    let described = bridged.localizedDescription
    return described.hasPrefix("The operation could not be completed") ? "\(error)" : described
}
