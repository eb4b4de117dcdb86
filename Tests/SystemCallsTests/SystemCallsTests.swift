import Foundation
import Glibc
import SystemCalls
import Testing

/// Signals counted by the handler the EINTR test installs (no SA_RESTART, so blocked calls fail
/// with EINTR).
nonisolated(unsafe) private var interruptsSeen: Int32 = 0

/// Whether `fd` is an open descriptor of this process.
func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

@Suite("System calls")
struct SystemCallsTests {
    @Test("an error names the call, its subject and errno in words")
    func errorNamesCallAndErrno() throws {
        let path = "/nonexistent-\(getpid())/file"
        let error = #expect(throws: SystemCallError.self) { _ = try FileDescriptor.open(path, O_RDONLY) }
        #expect(error?.errno == ENOENT)
        #expect(error?.call == "open(\(path))")
        #expect(error?.description == "open(\(path)) failed (errno \(ENOENT): No such file or directory)")
    }

    @Test("a descriptor is closed when its owner lets it go, and close() consumes it")
    func ownership() throws {
        var raw: Int32 = -1
        do {
            let fd = try FileDescriptor.open("/dev/null", O_RDONLY)
            raw = fd.rawValue
            #expect(isOpen(raw))
            #expect(fcntl(raw, F_GETFD) & FD_CLOEXEC != 0, "opened close-on-exec")
        }
        #expect(!isOpen(raw), "closed at the end of its owner's scope")

        let second = try FileDescriptor.open("/dev/null", O_RDONLY)
        let secondRaw = second.rawValue
        try second.close()
        #expect(!isOpen(secondRaw))

        let third = try FileDescriptor.open("/dev/null", O_RDONLY)
        let kept = third.relinquish()
        #expect(isOpen(kept), "relinquish leaves it open for its new owner")
        Glibc.close(kept)
    }

    @Test("a pipe's ends read and write; a non-blocking read with nothing there says it would block")
    func pipeReadWrite() throws {
        let pipe = try FileDescriptor.pipe(flags: O_NONBLOCK)
        let message = Array("hello".utf8)
        let written = try message.withUnsafeBytes { try pipe.writeEnd.write($0) }
        #expect(written == 5)
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = try buffer.withUnsafeMutableBytes { try pipe.readEnd.read(into: $0) }
        #expect(Array(buffer.prefix(count)) == message)
        let error = #expect(throws: SystemCallError.self) {
            _ = try buffer.withUnsafeMutableBytes { try pipe.readEnd.read(into: $0, call: "read(signal pipe)") }
        }
        #expect(error?.wouldBlock == true)
        #expect(error?.call.hasPrefix("read(signal pipe)(fd ") == true)
    }

}

/// A thread id and a read's outcome handed from the reader thread to the test.
final class LockedResult: @unchecked Sendable {
    private let condition = NSCondition()
    private var thread: pthread_t?
    private var outcome: Result<(Int, UInt8), any Error>?

    func set(thread: pthread_t) { condition.withLock { self.thread = thread; condition.broadcast() } }
    func finish(_ outcome: Result<(Int, UInt8), any Error>) { condition.withLock { self.outcome = outcome; condition.broadcast() } }

    func waitForThread(timeout: Double) -> pthread_t? {
        condition.withLock {
            let deadline = Date().addingTimeInterval(timeout)
            while thread == nil && condition.wait(until: deadline) {}
            return thread
        }
    }

    func waitForOutcome(timeout: Double) -> Result<(Int, UInt8), any Error>? {
        condition.withLock {
            let deadline = Date().addingTimeInterval(timeout)
            while outcome == nil && condition.wait(until: deadline) {}
            return outcome
        }
    }
}

@Suite("System call errors as LocalizedError")
struct SystemCallErrorDescriptionTests {
    @Test("a file that cannot be opened says why, and carries the failed call")
    func regularFileErrorCarriesItsCause() throws {
        let path = "/nonexistent-\(getpid())/list.m3u"
        let error = try #require(throws: RegularFileError.self) { _ = try RegularFile.read(path, limit: 1 << 20) }
        #expect(error.localizedDescription == "\(path) cannot be opened: No such file or directory")
        #expect(error.cause?.errno == ENOENT)
        #expect(error.cause?.localizedDescription == "open(\(path)) failed (errno \(ENOENT): No such file or directory)")
    }
}
