import Foundation
@testable import Media
import Playback
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

    static func timestamps(_ reader: any FrameReader) throws -> [Double] {
        var all: [Double] = []
        while let frame = try reader.nextFrame() { all.append(frame.pts.seconds) }
        return all
    }

    /// Taken: the file is opened once (early), and the reader's frames are every frame, in order,
    /// from the first (the one decoded early) on.
    @Test func theSessionTakesTheEarlyOpenAndReadsEveryFrame() throws {
        let path = try Self.copy()
        let expected = try Self.timestamps(FFmpegBackend().openReader(URL(fileURLWithPath: path)))
        let opensBefore = FileOpens.of(path)
        EarlyStart.start(URL(fileURLWithPath: path), limits: .standard, threads: 0, hardware: .none, logger: Self.logger)
        let backend = FFmpegBackend()
        let source = try backend.openSource(URL(fileURLWithPath: path))
        #expect(try source.describe().tracks.first?.naturalSize == VideoSize(width: 64, height: 64))
        let reader = try source.openReader()
        #expect(FileOpens.of(path) == opensBefore + 1, "the early open was not taken")
        #expect(expected.count == 60)
        #expect(try Self.timestamps(reader) == expected)
    }

    /// A reader that decodes otherwise (one thread, a preroll's) opens a decoder of its own on the
    /// early-opened file; the early decoder is closed, and the next start can take the slot.
    @Test func aReaderAskingForOtherDecodingOpensItsOwn() throws {
        let path = try Self.copy()
        EarlyStart.start(URL(fileURLWithPath: path), limits: .standard, threads: 0, hardware: .none, logger: Self.logger)
        var backend = FFmpegBackend()
        backend.threads = 1
        let source = try backend.openSource(URL(fileURLWithPath: path))
        let reader = try source.openReader()
        #expect(try Self.timestamps(reader).count == 60)
        let again = try Self.copy()
        let opensBefore = FileOpens.of(again)
        EarlyStart.start(URL(fileURLWithPath: again), limits: .standard, threads: 0, hardware: .none, logger: Self.logger)
        _ = try FFmpegBackend().openSource(URL(fileURLWithPath: again)).openReader()
        #expect(FileOpens.of(again) == opensBefore + 1, "the slot was still held by the earlier start")
    }

    /// A preroll's reader (one thread, its first packet alone) lets the early decoder go, and reads
    /// the first frame itself; the slot is free at once.
    @Test func aPrerollReaderLetsTheEarlyDecoderGo() throws {
        let path = try Self.copy()
        EarlyStart.start(URL(fileURLWithPath: path), limits: .standard, threads: 0, hardware: .none, logger: Self.logger)
        let source = try FFmpegBackend().openSource(URL(fileURLWithPath: path))
        #expect(try source.openPrerollReader().nextFrame()?.pts.seconds == 0)
        let again = try Self.copy()
        let opensBefore = FileOpens.of(again)
        EarlyStart.start(URL(fileURLWithPath: again), limits: .standard, threads: 0, hardware: .none, logger: Self.logger)
        _ = try FFmpegBackend().openSource(URL(fileURLWithPath: again)).openReader()
        #expect(FileOpens.of(again) == opensBefore + 1, "the slot was still held by the earlier start")
    }

    /// Another file's open does not take it.
    @Test func anotherFileOpensItself() throws {
        let path = try Self.copy(), other = try Self.copy()
        EarlyStart.start(URL(fileURLWithPath: path), limits: .standard, threads: 0, hardware: .none, logger: Self.logger)
        let opensBefore = FileOpens.of(other)
        let reader = try FFmpegBackend().openSource(URL(fileURLWithPath: other)).openReader()
        #expect(FileOpens.of(other) == opensBefore + 1)
        #expect(try Self.timestamps(reader).count == 60)
        _ = try FFmpegBackend().openSource(URL(fileURLWithPath: path)).openReader()  // takes it: the slot is free for the next test
    }
}
