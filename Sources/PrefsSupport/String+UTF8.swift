extension String {
    /// The string whose UTF-8 encoding is `bytes` exactly, or `nil` when they are not valid UTF-8.
    ///
    /// `String(validating:as:)` does this from macOS 15 and iOS 18 on; the package supports
    /// earlier systems, where the bytes are decoded scalar by scalar instead.
    ///
    /// ```swift
    /// String(validatingUTF8Bytes: [0x68, 0x69])  // "hi"
    /// ```
    package init?(validatingUTF8Bytes bytes: some Collection<UInt8>) {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
            self = text
            return
        }
        var scalars = String.UnicodeScalarView()
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): scalars.append(scalar)
            case .emptyInput:
                self = String(scalars)
                return
            case .error: return nil
            }
        }
    }

    /// The same for bytes in memory, without generic code on the way: decoding replaces each
    /// invalid sequence with U+FFFD, so the bytes were valid exactly when the result encodes back
    /// to them.
    ///
    /// ```swift
    /// bytes.withUnsafeBytes { String(validatingUTF8Bytes: $0) }
    /// ```
    package init?(validatingUTF8Bytes bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        // ASCII (most keys and values) is valid as it is: no need to compare.
        if bytes.allSatisfy({ $0 < 0x80 }) {
            self = text
            return
        }
        guard text.utf8.elementsEqual(bytes) else { return nil }
        self = text
    }
}
