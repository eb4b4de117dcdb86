import CALSA
import Glibc
import Playback

/// The ALSA calls a write makes: the device's (`DeviceCalls`), or a script in tests.
protocol PCMWriteCalls {
    /// `snd_pcm_writei`: frames written, or a negative errno.
    mutating func writei(_ bytes: UnsafeRawPointer, frames: Int) -> Int
    /// `snd_pcm_wait`: 1 ready, 0 timed out, or a negative errno.
    mutating func wait(milliseconds: Int32) -> Int32
    mutating func prepare() -> Int32
    mutating func resume() -> Int32
    /// Waits `milliseconds` between two tries of `resume` (less when the output is interrupted).
    mutating func waitBeforeRetry(milliseconds: Int32)
}

struct DeviceCalls: PCMWriteCalls {
    let pcm: OpaquePointer
    /// The output's interruption: a resume retry waits on it.
    let closing: Latch<Void>
    func writei(_ bytes: UnsafeRawPointer, frames: Int) -> Int { snd_pcm_writei(pcm, bytes, snd_pcm_uframes_t(frames)) }
    func wait(milliseconds: Int32) -> Int32 { snd_pcm_wait(pcm, milliseconds) }
    func prepare() -> Int32 { snd_pcm_prepare(pcm) }
    func resume() -> Int32 { snd_pcm_resume(pcm) }
    func waitBeforeRetry(milliseconds: Int32) { _ = closing.wait(timeout: Double(milliseconds) / 1000) }
}

struct WriteCounters: Equatable {
    var framesWritten = 0
    var underruns = 0
    var suspends = 0
}

/// Writes `total` frames from `base`: waits for room (at most `timeoutMilliseconds` each time),
/// recovers an underrun (EPIPE: prepare) or a suspend (ESTRPIPE: resume, retried up to 100 times
/// 10 ms apart, else prepare), counting them, and goes on. Anything else throws,
/// naming the call and ALSA's reason.
func writeAll<Calls: PCMWriteCalls>(_ base: UnsafeRawPointer, frames total: Int, frameBytes: Int, calls: inout Calls,
                                    counters: inout WriteCounters, timeoutMilliseconds: Int32, device: String) throws {
    var done = 0
    while done < total {
        let r = calls.writei(base + done * frameBytes, frames: total - done)
        if r > 0 {
            let written = min(r, total - done)
            done += written
            counters.framesWritten += written
        } else if r == -Int(EAGAIN) || r == 0 {
            let ready = calls.wait(milliseconds: timeoutMilliseconds)
            if ready == 0 {
                throw AudioError(device: device, call: "snd_pcm_wait", code: -ETIMEDOUT,
                                 reason: "timed out: no room in the device buffer for \(timeoutMilliseconds) ms")
            }
            if ready < 0 { try recover(ready, call: "snd_pcm_wait", calls: &calls, counters: &counters, device: device) }
        } else {
            try recover(Int32(clamping: r), call: "snd_pcm_writei", calls: &calls, counters: &counters, device: device)
        }
    }
}

private func recover<Calls: PCMWriteCalls>(_ code: Int32, call: String, calls: inout Calls, counters: inout WriteCounters,
                                           device: String) throws {
    switch code {
    case -EPIPE:
        counters.underruns += 1
        let r = calls.prepare()
        if r < 0 { throw AudioError(device: device, call: "snd_pcm_prepare", alsa: r) }
    case -ESTRPIPE:
        counters.suspends += 1
        var r = calls.resume()
        var tries = 0
        while r == -EAGAIN && tries < 100 {
            calls.waitBeforeRetry(milliseconds: 10)
            tries += 1
            r = calls.resume()
        }
        if r < 0 {  // cannot resume (or still waking after 1 s): start afresh
            let prepared = calls.prepare()
            if prepared < 0 { throw AudioError(device: device, call: "snd_pcm_prepare", alsa: prepared) }
        }
    default:
        throw AudioError(device: device, call: call, alsa: code)
    }
}
