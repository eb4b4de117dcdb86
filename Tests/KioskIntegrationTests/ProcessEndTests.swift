import Foundation
import Testing
import TestSupport

/// The tests' own way of seeing a child end (`Process.end`, `Command.collect`) does not wait for
/// processes that inherited the child's descriptors.
struct ProcessEndTests {
    /// A shell that leaves a background `sleep` holding Foundation's socket and the output pipe:
    /// Foundation would report it running for 20 s; the status comes at once.
    @Test func aChildThatLeftAGrandchildBehindIsSeenToEndAtOnce() throws {
        let started = Date()
        let result = try Command.run("/bin/sh", ["-c", "echo before; sleep 20 & exit 3"], timeout: 60)
        #expect(result.end == ProcessEnd(status: 3, signalled: false))
        #expect(result.text == "before\n")
        #expect(Date().timeIntervalSince(started) < 15, "waited for the grandchild")
    }

    @Test func aHangIsKilledAtItsTimeout() throws {
        let result = try Command.run("/bin/sleep", ["30"], timeout: 0.5)
        #expect(result.timedOut)
        #expect(result.status == SIGKILL)
    }
}
