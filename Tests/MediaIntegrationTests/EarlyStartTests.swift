import Foundation
@testable import Media
import Playback
import Synchronization
import Testing
import TestSupport

/// The first item's file opened and its first picture decoded before the session asks
/// (`EarlyStart`): the session's source and reader take them, and read what they would have read
/// from a file of their own.
@Suite(.serialized) struct EarlyStartTests {
    static let logger = Logger(level: .error, sink: { _ in })

    /// A copy of the shared clip under a name of its own: the open counts are this test's alone.
    static func copy() throws -> String {
        let path = TestMedia.folder + "/early-start-\(UUID().uuidString).mp4"
        try FileManager.default.copyItem(atPath: try DemuxerTests.clip(), toPath: path)
        return path
    }

    struct SlotHeld: Error, CustomStringConvertible {
        let seconds: Double
        var description: String { "the early-start slot stayed held by another start (a kiosk's beside this suite) for \(seconds) s" }
    }

    /// Starts the early open of `path`. Kiosk tests running beside this suite start early opens of
    /// their own into the one slot: waits (within the slot's unclaimed limit and 5 s more) for theirs to go.
    static func start(_ path: String, hardware: HardwareDecoding = .none, frames: Int = 1) throws {
        let limit = EarlyStart.unclaimedLimit + 5
        let deadline = Date().addingTimeInterval(limit)
        while !EarlyStart.start(URL(fileURLWithPath: path), limits: .standard, hardware: hardware, frames: frames, logger: logger) {
            guard Date() < deadline else { throw SlotHeld(seconds: limit) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    static func timestamps(_ reader: any FrameReader) throws -> [Double] {
        var all: [Double] = []
        while let frame = try reader.nextFrame() { all.append(frame.pts.seconds) }
        return all
    }

    /// Taken: the file is opened once (early), the reader is given the early decoder with the frame
    /// it decoded, and its frames are every frame, in order, from the first (the one decoded
    /// early) on.
    @Test func theSessionTakesTheEarlyOpenAndReadsEveryFrame() throws {
        let path = try Self.copy()
        let expected = try Self.timestamps(FFmpegBackend().openReader(URL(fileURLWithPath: path)))
        let opensBefore = FileOpens.of(path)
        try Self.start(path)
        let backend = FFmpegBackend()
        let source = try backend.openSource(URL(fileURLWithPath: path))
        #expect(try source.describe().tracks.first?.naturalSize == VideoSize(width: 64, height: 64))
        let takenBefore = EarlyStart.decodersTaken.load(ordering: .relaxed)
        let reader = try source.openReader()
        #expect(FileOpens.of(path) == opensBefore + 1, "the early open was not taken")
        #expect(EarlyStart.decodersTaken.load(ordering: .relaxed) == takenBefore + 1, "the early decoder was not taken")
        let taken = try #require(reader as? DecoderReader)
        #expect(taken.decodedEarly == 1 && taken.decoder.delivered == 1, "the reader was not given the early decoder and its frame")
        #expect(expected.count == 60)
        #expect(try Self.timestamps(reader) == expected)
    }

    /// Asked for a preroll's frames (or more than the clip has), the early decoder (one thread)
    /// has decoded them all before the reader reads. The reader hands them out first, then decodes
    /// on: with the early decoder itself when it asks for one thread, else with its own (frame
    /// threads), opened once they are out, which drops its copies of them. Either way every frame,
    /// in order, each once, and the end after the last.
    @Test(arguments: [(3, 1), (3, 0), (70, 1), (70, 0)])
    func theEarlyFramesAreHandedOutFirstAndNoneIsLost(frames: Int, threads: Int) throws {
        let path = try Self.copy()
        let expected = try Self.timestamps(FFmpegBackend().openReader(URL(fileURLWithPath: path)))
        try Self.start(path, frames: frames)
        var backend = FFmpegBackend()
        backend.threads = threads
        let reader = try #require(try backend.openSource(URL(fileURLWithPath: path)).openReader() as? DecoderReader)
        let early = min(frames, expected.count)
        #expect(reader.decodedEarly == early && reader.decoder.delivered == early, "the early decoder did not decode the frames asked")
        let earlyDecoder = reader.decoder
        #expect(try Self.timestamps(reader) == expected)
        #expect(try reader.nextFrame() == nil)
        #expect((reader.decoder === earlyDecoder) == (threads == 1 || frames > expected.count))
    }

    /// A reader cancelled while it hands out the early frames (its own decoder not yet open)
    /// cancels the decoder it opens next: its next read fails at once instead of decoding on.
    @Test func aCancelBeforeTheReadersOwnDecoderOpensReachesIt() throws {
        let path = try Self.copy()
        try Self.start(path, frames: 2)
        let reader = try #require(try FFmpegBackend().openSource(URL(fileURLWithPath: path)).openReader() as? DecoderReader)
        let earlyDecoder = reader.decoder
        #expect(try reader.nextFrame() != nil && reader.nextFrame() != nil)
        let cancel = try #require(reader.canceller)
        cancel()
        #expect(throws: (any Error).self) { try reader.nextFrame() }
        #expect(reader.decoder !== earlyDecoder, "the reader's own decoder was not opened")
    }

    /// A reader whose own decoder cannot open reads on with the one it was given: every frame,
    /// in order, each once.
    @Test func aReaderWhoseOwnDecoderCannotOpenReadsOnWithTheEarlyOne() throws {
        let path = try Self.copy()
        let expected = try Self.timestamps(FFmpegBackend().openReader(URL(fileURLWithPath: path)))
        let decoder = try VideoDecoder(path: path, threads: 1)
        let early = [try #require(try decoder.nextFrame()), try #require(try decoder.nextFrame())]
        struct CannotOpen: Error {}
        let reader = DecoderReader(decoder: decoder, decoded: early, own: { throw CannotOpen() })
        #expect(try Self.timestamps(reader) == expected)
        #expect(reader.decoder === decoder)
    }

    /// A reader that decodes otherwise (another hardware setting) opens a decoder of its own on the
    /// early-opened file; the early decoder is closed, and the next start can take the slot.
    @Test func aReaderAskingForOtherDecodingOpensItsOwn() throws {
        let path = try Self.copy()
        try Self.start(path)
        let backend = FFmpegBackend(hardware: .auto)
        let source = try backend.openSource(URL(fileURLWithPath: path))
        let takenBefore = EarlyStart.decodersTaken.load(ordering: .relaxed)
        let reader = try source.openReader()
        #expect(EarlyStart.decodersTaken.load(ordering: .relaxed) == takenBefore, "a reader decoding otherwise took the early decoder")
        #expect(try Self.timestamps(reader).count == 60)
        #expect(!EarlyStart.holds(URL(fileURLWithPath: path)), "the slot was still held by the earlier start")
    }

    /// A preroll's reader (one thread, its first packet alone) lets the early decoder go, and reads
    /// the first frame itself; the slot is free at once.
    @Test func aPrerollReaderLetsTheEarlyDecoderGo() throws {
        let path = try Self.copy()
        try Self.start(path)
        let source = try FFmpegBackend().openSource(URL(fileURLWithPath: path))
        let takenBefore = EarlyStart.decodersTaken.load(ordering: .relaxed)
        #expect(try source.openPrerollReader().nextFrame()?.pts.seconds == 0)
        #expect(EarlyStart.decodersTaken.load(ordering: .relaxed) == takenBefore, "the preroll's reader took the early decoder")
        #expect(!EarlyStart.holds(URL(fileURLWithPath: path)), "the slot was still held by the earlier start")
    }

    /// Readers opening on the early-opened file at once: one of them at most gets the early decoder
    /// (it is claimed where it is found), and the slot is free after.
    @Test func concurrentReadersGetTheEarlyDecoderOnce() throws {
        let backend = FFmpegBackend()
        for _ in 0..<20 {
            let path = try Self.copy()
            try Self.start(path, hardware: backend.hardware)
            let source = try #require(try backend.openSource(URL(fileURLWithPath: path)) as? FFmpegSource)
            let got = Atomic(0)
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                if EarlyStart.takeDecoder(for: source.demuxer, hardware: backend.hardware) != nil {
                    got.add(1, ordering: .relaxed)
                }
            }
            #expect(got.load(ordering: .relaxed) == 1)
            #expect(!EarlyStart.holds(URL(fileURLWithPath: path)), "the slot was still held")
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// Another file's open does not take it.
    @Test func anotherFileOpensItself() throws {
        let path = try Self.copy(), other = try Self.copy()
        try Self.start(path)
        let opensBefore = FileOpens.of(other)
        let reader = try FFmpegBackend().openSource(URL(fileURLWithPath: other)).openReader()
        #expect(FileOpens.of(other) == opensBefore + 1)
        #expect(try Self.timestamps(reader).count == 60)
        _ = try FFmpegBackend().openSource(URL(fileURLWithPath: path)).openReader()  // takes it: the slot is free for the next test
    }
}
