import Foundation

/// Log lines, collected from any thread; `onLine` sees each one as it comes.
public final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private let onLine: @Sendable (String) -> Void
    public init(onLine: @escaping @Sendable (String) -> Void = { _ in }) { self.onLine = onLine }
    public func append(_ line: String) {
        lock.withLock { lines.append(line) }
        onLine(line)
    }
    public var all: [String] { lock.withLock { lines } }
}
