import Foundation

/// Runs `body` on `count` threads of their own at once, and returns when every one has.
///
/// Real threads, not `DispatchQueue.concurrentPerform`: that runs about one iteration per core at
/// a time, so on a small machine two "concurrent" iterations may never overlap.
///
/// ```swift
/// onThreads(4) { index in store.write(index) }
/// ```
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let finished = DispatchSemaphore(value: 0)
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            start.wait()
            body(index)
            finished.signal()
        }
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    for _ in 0..<count { finished.wait() }
}
