@testable import Media
import CFFmpeg
import Foundation
import Playback
import Synchronization
import Testing
import TestSupport

/// A backend whose decoders fail mid-stream after `afterFrames` frames, as a hardware decoder that
/// dies would.
struct FailingMidStreamBackend: MediaBackend {
    let inner = FFmpegBackend()
    let afterFrames: Int

    func probe(_ url: URL) throws -> AssetDescription { try inner.probe(url) }

    func openReader(_ url: URL) throws -> any FrameReader {
        let decoder = try VideoDecoder(path: url.path, sessions: DyingSessions(afterFrames: afterFrames))
        return DecoderReader(decoder: decoder)
    }
}

/// The output's DMA-BUF decision, given to a decoder when it opens (the output opened first).
@Suite struct InteropChoiceTests {
    /// A target that counts the times it is asked.
    final class CountingTarget: FrameInteropTarget {
        let asked = Atomic(0)
        func chooseInterop(hardware: HardwareDecoding, firstFrame: Result<DRMPrimeDescriptor, MediaError>) -> InteropChoice {
            asked.add(1, ordering: .relaxed)
            return InteropChoice(.dmabuf, "test")
        }
    }

    /// A DRM PRIME frame as a v4l2m2m decoder gives it: the descriptor is read back as given, the
    /// frame holds its own reference, and without a hardware frames context the copy to memory
    /// fails with a clear error instead of crashing.
    @Test func aDRMPrimeFrameKeepsItsDescriptorAndItsCopyFailsCleanlyWithoutAFramesContext() throws {
        let nv12 = DRMPrimeDescriptor.fourcc("NV12")
        let given = DRMPrimeDescriptor(width: 64, height: 48, objects: [.init(fd: 77, size: 6144, modifier: 0x0700_0000_0000_0004)],
                                       layers: [.init(fourcc: nv12, planes: [.init(object: 0, offset: 0, pitch: 64), .init(object: 0, offset: 4096, pitch: 64)])])
        let prime = try DRMPrimeFrame(external: given)
        #expect(prime.descriptor == given)
        #expect(prime.softwareFormat == nil)
        let frame = VideoFrame(drmPrime: prime, format: .nv12, pts: .zero, duration: MediaTime(value: 1, timescale: 25),
                               colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left, rotation: .none)
        #expect(frame.width == 64 && frame.height == 48)
        let error = try #require(throws: MediaError.self) { try frame.copiedToMemory() }
        #expect(error.call.hasPrefix("av_hwframe_transfer_data"))
        prime.reportImportFailure("first")
        prime.reportImportFailure("second")
        #expect(prime.importFailure == "first")
    }
}

/// Codec sessions whose first one behaves as a hardware decoder that dies mid-stream: from
/// `afterFrames` frames on, every frame fails with EIO. The sessions after it (the hand-over to
/// software) are FFmpeg's own.
final class DyingSessions: CodecSessionMaking {
    let afterFrames: Int
    private let made = Mutex(0)

    init(afterFrames: Int) { self.afterFrames = afterFrames }

    func software(_ decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>, threads: Int, uri: String) throws -> CodecSession {
        let first = made.withLock { count in
            defer { count += 1 }
            return count == 0
        }
        guard first else { return try FFmpegCodecSessions().software(decoder, stream: stream, threads: threads, uri: uri) }
        return try DyingSession(afterFrames: afterFrames, decoder: decoder, stream: stream, threads: threads, uri: uri)
    }

    func hardware(_ kind: HardwareDecoding, software decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>,
                  uri: String, drmPrime: Bool) throws -> CodecSession {
        throw MediaError(uri: uri, call: "hardware", reason: "not in this test")
    }
}

final class DyingSession: CodecSession {
    let afterFrames: Int
    var received = 0

    init(afterFrames: Int, decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>, threads: Int, uri: String) throws {
        self.afterFrames = afterFrames
        try super.init(software: decoder, stream: stream, threads: threads, uri: uri)
    }

    override func receiveFrame(into frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        let r = super.receiveFrame(into: frame)
        guard r == 0 else { return r }
        received += 1
        if received > afterFrames {
            av_frame_unref(frame)
            return -EIO  // AVERROR(EIO)
        }
        return r
    }

    /// Fails as a hardware path does: the decoder hands over to software.
    override var handsOverOnFailure: Bool { true }
}
