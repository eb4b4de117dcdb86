import Foundation
import Glibc
import SystemCalls
import Testing
@testable import SystemCallsTests

/// Signals counted by the handler the EINTR test installs (no SA_RESTART, so blocked calls fail
/// with EINTR).
nonisolated(unsafe) private var interruptsSeen: Int32 = 0

@Suite("System calls")
struct SystemCallsTests {

    @Test("poll times out after about the time asked, and says ready at once when data is there")
    func pollTimeout() throws {
        let pipe = try FileDescriptor.pipe()
        let started = Date()
        #expect(try pipe.readEnd.poll(timeout: 0.2) == false)
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.2 && waited < 2, "waited \(waited) s")
        #expect(try pipe.readEnd.poll(timeout: 0) == false)
        _ = try [UInt8(1)].withUnsafeBytes { try pipe.writeEnd.write($0) }
        #expect(try pipe.readEnd.poll(timeout: 5) == true)
    }

    @Test("a read interrupted by signals is retried until data comes")
    func retriesEINTR() throws {
        // A handler without SA_RESTART: the kernel fails the blocked read with EINTR.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptsSeen += 1 }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        sigaction(SIGURG, &action, &previous)
        defer { sigaction(SIGURG, &previous, nil) }

        let pipe = try FileDescriptor.pipe()
        let reader = pipe.readEnd.rawValue
        let result = LockedResult()
        let thread = Thread {
            var unblock = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SIGURG)
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            result.set(thread: pthread_self())
            let borrowed = FileDescriptor(adopting: reader)
            var byte: UInt8 = 0
            let outcome = Result { try withUnsafeMutableBytes(of: &byte) { try borrowed.read(into: $0) } }
            _ = borrowed.relinquish()   // the pipe's owner closes it
            result.finish(outcome.map { ($0, byte) })
        }
        thread.start()
        let target = try #require(result.waitForThread(timeout: 5), "the reader thread did not start")
        for _ in 0..<5 {
            usleep(30_000)
            pthread_kill(target, SIGURG)
        }
        usleep(30_000)
        _ = try [UInt8(42)].withUnsafeBytes { try pipe.writeEnd.write($0) }
        let outcome = try #require(result.waitForOutcome(timeout: 5), "the read did not return")
        let (count, byte) = try outcome.get()
        #expect(count == 1 && byte == 42)
        #expect(interruptsSeen >= 1, "no signal reached the reader: the test proved nothing")
    }
}
