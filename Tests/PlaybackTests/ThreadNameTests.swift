import Foundation
import Playback
import PlaybackTestSupport
import Testing

@Suite struct ThreadNameTests {
    /// The kernel's names of this process's threads (`/proc/self/task/*/comm`), read from outside
    /// them.
    static func kernelNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: CharacterSet.newlines)
        }
    }

    /// How many threads the kernel calls `expected` while a thread started as `name` runs.
    func count(_ expected: String, whileRunning name: String) -> Int? {
        let started = Latch<Bool>()
        let release = Latch<Bool>()
        startThread(named: name) {
            started.set(true)
            _ = release.wait(timeout: 300)
        }
        defer { release.set(true) }
        guard started.wait(timeout: 240) != nil else { return nil }
        return Self.kernelNames().filter { $0 == expected }.count
    }

    @Test func theOperatingSystemSeesTheThreadsName() {
        #expect(count("mq-test-name", whileRunning: "mq-test-name") == 1)
    }

    @Test func aLongNameIsCutToFifteenBytesOnACharacterBoundary() {
        #expect(count("mq-test-cut-abc", whileRunning: "mq-test-cut-abcdef") == 1)
        // "é" is two bytes: with 14 ASCII bytes before it, it would make 16, so it is left out whole.
        #expect(count("mq-test-cut-xy-", whileRunning: "mq-test-cut-xy-é") == 1)
    }
}
