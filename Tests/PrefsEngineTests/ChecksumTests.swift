import CPrefsShared
import Foundation
import Testing

/// The journal's CRC-32C: the same on every processor, and from the instruction where there is one.
@Suite struct ChecksumTests {
    /// The standard check value of CRC-32C (Castagnoli): "123456789" gives 0xE3069283.
    @Test func theCheckValueIsCastagnolis() {
        let bytes = Array("123456789".utf8)
        #expect(prefs_crc32c(bytes, bytes.count) == 0xE306_9283)
        #expect(prefs_crc32c_portable(bytes, bytes.count) == 0xE306_9283)
    }

    /// The instruction and the table agree on every length and alignment a record can have.
    @Test func theInstructionAndTheTableAgree() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<4_096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBufferPointer { buffer in
            for start in 0..<9 {
                for count in [0, 1, 7, 8, 9, 15, 16, 63, 64, 1_000, 4_000] {
                    let from = buffer.baseAddress! + start
                    #expect(
                        prefs_crc32c(from, count) == prefs_crc32c_portable(from, count), "\(start), \(count)")
                }
            }
        }
    }

    /// On x86-64 the instruction is found by `cpuid` (not `__builtin_cpu_supports`, which Apple's
    /// toolchain cannot link): it is used exactly when the kernel says the processor has SSE 4.2.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/cpuinfo")))
    func theInstructionIsFoundWhereTheProcessorHasIt() throws {
        let info = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        #if arch(x86_64)
            let flags = info.split(separator: "\n").first { $0.hasPrefix("flags") } ?? ""
            let hasSSE42 = flags.split(separator: " ").contains("sse4_2")
            #expect((prefs_crc32c_uses_hardware() == 1) == hasSSE42)
        #else
            #expect(prefs_crc32c_uses_hardware() == 0)
        #endif
    }
}
