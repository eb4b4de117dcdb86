@testable import Audio
import Glibc
import Testing

/// What ALSA answers, scripted: the recovery of `writeAll` where no sound card can underrun or
/// suspend (ALSA's `null` and `file` plugins never do; a real device is needed for the calls themselves).
struct ScriptedCalls: PCMWriteCalls {
    /// Each `writei` in turn: a positive number accepts up to that many frames, else the code is
    /// returned; once empty every write is accepted whole.
    var writes: [Int]
    var waits: [Int32] = []
    var resumes: [Int32] = []
    var prepareResult: Int32 = 0
    let frameBytes: Int
    var received: [UInt8] = []
    var prepares = 0
    var pauses = 0
    var waitTimeouts: [Int32] = []

    mutating func writei(_ bytes: UnsafeRawPointer, frames: Int) -> Int {
        let r = writes.isEmpty ? frames : writes.removeFirst()
        guard r > 0 else { return r }
        let n = min(r, frames)
        received += UnsafeRawBufferPointer(start: bytes, count: n * frameBytes)
        return n
    }
    mutating func wait(milliseconds: Int32) -> Int32 {
        waitTimeouts.append(milliseconds)
        return waits.isEmpty ? 1 : waits.removeFirst()
    }
    mutating func prepare() -> Int32 {
        prepares += 1
        return prepareResult
    }
    mutating func resume() -> Int32 { resumes.isEmpty ? 0 : resumes.removeFirst() }
    mutating func waitBeforeRetry(milliseconds: Int32) { pauses += 1 }
}

@Suite struct WriteRecoveryTests {
    let frames: [UInt8] = (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 7) }  // 1000 frames of 4 bytes

    func run(_ calls: inout ScriptedCalls, _ counters: inout WriteCounters) throws {
        try frames.withUnsafeBytes { raw in
            try writeAll(raw.baseAddress!, frames: 1000, frameBytes: 4, calls: &calls, counters: &counters,
                         timeoutMilliseconds: 250, device: "test")
        }
    }

    @Test func underrunsAndSuspendsAreRecoveredCountedAndNothingIsLostOrRepeated() throws {
        var calls = ScriptedCalls(writes: [300, -Int(EAGAIN), 200, -Int(EPIPE), -Int(ESTRPIPE), 100, -Int(EPIPE)],
                                  resumes: [-EAGAIN, -EAGAIN, 0], frameBytes: 4)
        var counters = WriteCounters()
        try run(&calls, &counters)
        #expect(calls.received == frames)
        #expect(counters == WriteCounters(framesWritten: 1000, underruns: 2, suspends: 1))
        #expect(calls.prepares == 2)  // one per underrun; the suspend resumed
        #expect(calls.pauses == 2)
        #expect(calls.waitTimeouts == [250])  // EAGAIN waited, with its timeout
    }

    @Test func aSuspendThatCannotResumeIsPreparedAfterOneSecondAtMost() throws {
        var calls = ScriptedCalls(writes: [-Int(ESTRPIPE)], resumes: Array(repeating: -EAGAIN, count: 500), frameBytes: 4)
        var counters = WriteCounters()
        try run(&calls, &counters)
        #expect(calls.pauses == 100)  // 100 waits of at most 10 ms
        #expect(calls.prepares == 1)
        #expect(counters.suspends == 1 && counters.framesWritten == 1000)
    }

    @Test func anUnderrunSeenWhileWaitingIsRecoveredToo() throws {
        var calls = ScriptedCalls(writes: [-Int(EAGAIN)], waits: [-EPIPE], frameBytes: 4)
        var counters = WriteCounters()
        try run(&calls, &counters)
        #expect(counters.underruns == 1 && calls.prepares == 1 && calls.received == frames)
    }

    @Test func aDeviceThatMakesNoRoomTimesOutNamingTheWait() {
        var calls = ScriptedCalls(writes: [400, -Int(EAGAIN)], waits: [0], frameBytes: 4)
        var counters = WriteCounters()
        #expect { try run(&calls, &counters) } throws: { error in
            let error = error as? AudioError
            return error?.call == "snd_pcm_wait" && error?.reason.contains("250 ms") == true && error?.device == "test"
        }
        #expect(counters.framesWritten == 400)
    }

    @Test func otherFailuresThrowWithALSAsReason() {
        var calls = ScriptedCalls(writes: [-Int(EIO)], frameBytes: 4)
        var counters = WriteCounters()
        #expect { try run(&calls, &counters) } throws: { error in
            (error as? AudioError)?.description == "audio device \"test\": snd_pcm_writei failed: Input/output error"
        }
        // A prepare that fails after an underrun names the prepare.
        var failing = ScriptedCalls(writes: [-Int(EPIPE)], prepareResult: -ENODEV, frameBytes: 4)
        #expect { try run(&failing, &counters) } throws: { error in
            (error as? AudioError)?.call == "snd_pcm_prepare" && (error as? AudioError)?.code == -ENODEV
        }
    }
}
