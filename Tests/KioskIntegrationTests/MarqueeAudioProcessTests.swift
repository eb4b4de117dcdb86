import Control
import Foundation
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself with sound: the ALSA device is ALSA's `file` plugin, defined in an `.asoundrc`
/// under a HOME of the test's own, so the sound marquee plays is captured in a file.
@Suite struct MarqueeAudioProcessTests {
    /// A HOME whose `.asoundrc` defines `marquee_capture` (float32 stereo into `file`).
    static func home(capture file: String) throws -> String {
        let home = TestMedia.folder + "/home-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try """
            pcm.marquee_capture {
                type file
                slave.pcm { type null }
                file "\(file)"
                format "raw"
            }
            """.write(toFile: home + "/.asoundrc", atomically: true, encoding: .utf8)
        return home
    }

    static func tone() throws -> String {
        try TestMedia.make("proc-tone-2s.mp4", [
            "-f", "lavfi", "-i", "color=c=gray:size=32x32:rate=30:duration=2",
            "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=2",
            "-ac", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "192k", "-f", "mp4",
        ])
    }

    @Test func marqueePlaysTheSoundAndTakesItsPropertiesOverTheSocket() throws {
        let capture = TestMedia.folder + "/proc-capture-\(UUID().uuidString.prefix(8)).raw"
        let home = try Self.home(capture: capture)
        let config = try TestConfig.write(#"{"playlist": [{"uri": "\#(try Self.tone())"}], "loop": true, "audio": {"device": "marquee_capture", "volume": 50}}"#,
                                          named: "audio-\(UUID().uuidString).json")
        let running = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 6, environment: ["HOME": home])
        let client = try running.connect()
        func get(_ name: String) -> JSONValue? { client.request(["get_property", .string(name)], id: 1)?["data"] }
        #expect(get("volume")?.numberValue == 50)
        #expect(get("mute")?.boolValue == false)
        #expect(get("audio-device")?.stringValue == "marquee_capture")
        Thread.sleep(forTimeInterval: 1)
        #expect(get("current-ao")?.stringValue == "alsa", "\(running.log)")
        #expect(client.request(["set_property", "volume", 80], id: 2)?["error"]?.stringValue == "success")
        #expect(get("volume")?.numberValue == 80)
        #expect(client.request(["set_property", "volume", 180], id: 3)?["error"]?.stringValue == "error accessing property")
        let health = get("health")
        #expect(health?["status"]?.stringValue != "failed" && health?["status"]?.stringValue != "stalled", "\(String(describing: health))")
        #expect(!(health?["reasons"]?.arrayValue ?? []).contains { $0.stringValue?.contains("audio") == true }, "\(String(describing: health))")
        #expect(running.wait() == 0)
        // Float32 stereo: the tone (1/8, made stereo by ffmpeg at -3 dB) at 80 %.
        let data = try Data(contentsOf: URL(fileURLWithPath: capture))
        let left: [Float] = data.withUnsafeBytes { raw in stride(from: 0, to: raw.count - 7, by: 8).map { raw.loadUnaligned(fromByteOffset: $0, as: Float.self) } }
        let seconds = Double(left.count) / 48_000
        let tail = left.suffix(48_000).map { abs($0) }.max() ?? 0
        print("marquee with sound: \(left.count) frames (\(seconds) s) captured, peak of the last second \(tail)")
        #expect(seconds > 3.5 && seconds < 7, "\(seconds) s of sound for 6 s of playing")
        // At 80 % (0.071), told apart from 50 % (0.044) and 100 % (0.088); the margin allows the
        // resampler's correction and a busy machine's realignment.
        #expect(abs(tail - 0.125 * Float(0.5).squareRoot() * 0.8) < 0.012, "peak \(tail)")
    }

    /// A reload re-applies `audio.*`: volume and mute take effect on the playing sound, a new
    /// device moves it (the old capture stops growing, the new one fills), and `enabled: false`
    /// turns it off; each seen through the socket's properties and in the captured files.
    @Test func aReloadReappliesTheAudioSettings() throws {
        let id = UUID().uuidString.prefix(8)
        let first = TestMedia.folder + "/proc-reload-a-\(id).raw", second = TestMedia.folder + "/proc-reload-b-\(id).raw"
        let home = try Self.home(capture: first)
        try (try String(contentsOfFile: home + "/.asoundrc", encoding: .utf8) + """

            pcm.marquee_capture2 {
                type file
                slave.pcm { type null }
                file "\(second)"
                format "raw"
            }
            """).write(toFile: home + "/.asoundrc", atomically: true, encoding: .utf8)
        let tone = try Self.tone()
        func text(_ audio: String) -> String { #"{"playlist": [{"uri": "\#(tone)"}], "loop": true, "audio": \#(audio)}"# }
        let config = try TestConfig.write(text(#"{"device": "marquee_capture", "volume": 50}"#), named: "audio-reload-\(id).json")
        let running = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 12, environment: ["HOME": home])
        let client = try running.connect()
        func get(_ name: String) -> JSONValue? { client.request(["get_property", .string(name)], id: 1)?["data"] }
        func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }
        func waitFor(_ what: String, _ condition: () -> Bool) {
            for _ in 0..<60 where !condition() { Thread.sleep(forTimeInterval: 0.05) }
            #expect(condition(), "\(what)\n\(running.log)")
        }
        waitFor("sound to the first device") { get("current-ao")?.stringValue == "alsa" && size(first) > 0 }
        #expect(get("volume")?.numberValue == 50)

        // Volume and mute, same device.
        _ = try TestConfig.write(text(#"{"device": "marquee_capture", "volume": 20, "mute": true}"#), to: config)
        #expect(client.request(["reload"], id: 2)?["error"]?.stringValue == "success")
        #expect(get("volume")?.numberValue == 20)
        #expect(get("mute")?.boolValue == true)
        Thread.sleep(forTimeInterval: 0.6)
        let mutedFrom = size(first)
        Thread.sleep(forTimeInterval: 0.6)
        let muted = Self.floats(first, from: mutedFrom)
        #expect(muted.count > 10_000, "\(muted.count) samples after the mute")
        #expect((muted.map { abs($0) }.max() ?? 1) == 0, "sound while muted")

        // Another device: the sound moves there, unmuted at 100.
        _ = try TestConfig.write(text(#"{"device": "marquee_capture2"}"#), to: config)
        #expect(client.request(["reload"], id: 3)?["error"]?.stringValue == "success")
        waitFor("sound to the second device") { get("audio-device")?.stringValue == "marquee_capture2" && size(second) > 48_000 * 8 / 2 }
        #expect(get("volume")?.numberValue == 100)
        #expect(get("mute")?.boolValue == false)
        let firstDone = size(first)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(size(first) == firstDone, "the first device still gets sound")
        let moved = Self.floats(second, from: max(0, size(second) - 48_000 * 8 / 4))
        let peak = moved.map { abs($0) }.max() ?? 0
        #expect(abs(peak - 0.125 * Float(0.5).squareRoot()) < 0.012, "peak \(peak) at volume 100 on the second device")

        // Off.
        _ = try TestConfig.write(text(#"{"enabled": false}"#), to: config)
        #expect(client.request(["reload"], id: 4)?["error"]?.stringValue == "success")
        waitFor("no sound") { get("current-ao") == nil || get("current-ao") == .null }
        let secondDone = size(second)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(size(second) == secondDone, "sound after audio.enabled false")
        let health = get("health")
        #expect(!(health?["reasons"]?.arrayValue ?? []).contains { $0.stringValue?.contains("audio") == true }, "\(String(describing: health))")
        _ = client.request(["quit"], id: 5)
        _ = running.wait()
    }

    /// The left channel of a float32 stereo capture, from byte `offset` (rounded to a frame).
    static func floats(_ path: String, from offset: Int) -> [Float] {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else { return [] }
        let start = offset / 8 * 8
        guard start < data.count else { return [] }
        return data[start...].withUnsafeBytes { raw in
            stride(from: 0, to: raw.count - 7, by: 8).map { raw.loadUnaligned(fromByteOffset: $0, as: Float.self) }
        }
    }

    @Test func aMissingDeviceDegradesHealthAndThePicturesPlayOn() throws {
        let config = try TestConfig.write(#"{"playlist": [{"uri": "\#(try Self.tone())"}], "loop": true, "audio": {"device": "marquee_no_such_device"}}"#,
                                          named: "audio-missing-\(UUID().uuidString).json")
        let running = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 4)
        let client = try running.connect()
        Thread.sleep(forTimeInterval: 1.5)
        let health = client.request(["get_property", "health"], id: 1)?["data"]
        #expect(health?["status"]?.stringValue == "degraded", "\(String(describing: health))")
        #expect((health?["reasons"]?.arrayValue ?? []).contains { $0.stringValue?.contains("audio device marquee_no_such_device missing") == true },
                "\(String(describing: health))")
        #expect(running.wait() == 0)
        let shown = try running.traceLines().filter { ($0["type"] as? String) == "frame" }.count
        print("missing device: \(shown) pictures in 4 s")
        // 120 frames are due in 4 s; a busy machine drops late ones, but the pictures go on.
        #expect(shown >= 60, "\(shown) pictures shown in 4 s")
    }
}
