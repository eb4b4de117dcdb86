import CFFmpeg
import CShim
import Foundation
import Playback

// The hardware path: how its frames reach the display (DMA-BUF or copies, chosen once from the
// first frame), failures counted, and the hand-over to software at the same position.

extension VideoDecoder {
    /// Chooses, once, how this item's hardware frames reach the display: the output's target
    /// (given when the decoder opens, never waited for) decides from the first frame's DRM PRIME
    /// descriptor (decoded here and handed out first).
    func chooseInterop(_ target: (any FrameInteropTarget)?) throws {
        guard let kind = session.kind else { return }
        var choice: InteropChoice
        switch target {
        case nil:
            choice = InteropChoice(.copy, "no output to import DMA-BUFs into")
        case let target?:
            guard session.offersDRMPrime else {
                let why = kind == .cuda ? "CUDA frames are not DMA-BUFs (no CUDA-EGL interop)" : "the \(kind.rawValue) decoder gives frames in memory"
                choice = target.chooseInterop(hardware: kind, firstFrame: .failure(MediaError(uri: uri, call: "DRM PRIME", reason: why)))
                break
            }
            guard let first = try decodeRaw() else { return }
            guard session.kind != nil else {  // the hardware failed before its first frame: software
                pending = first
                return
            }
            pending = first
            let descriptor: Result<DRMPrimeDescriptor, MediaError>
            if let hw = session.hardwareFormat, first.pointee.format == hw.rawValue {
                do {
                    descriptor = .success(try DRMPrimeFrame(hardware: first, feedback: feedback, uri: uri).descriptor)
                } catch let error as MediaError {
                    descriptor = .failure(error)
                }
            } else {
                let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: first.pointee.format)).map { String(cString: $0) } ?? "?"
                descriptor = .failure(MediaError(uri: uri, call: "DRM PRIME", reason: "the decoder gave \(name) frames"))
            }
            choice = target.chooseInterop(hardware: kind, firstFrame: descriptor)
        }
        interop = choice.interop == .dmabuf ? .dmabuf : .copy
        decodingPath.interop = interop.rawValue
        decodingPath.interopReason = choice.reason
        // A v4l2m2m decoder that ignored the request (FFmpeg's own v4l2m2m never asks get_format:
        // only some vendor builds give DRM PRIME) already gives memory frames: it stays as it is.
        let givesMemoryFrames = pending.map { $0.pointee.format != AV_PIX_FMT_DRM_PRIME.rawValue } ?? false
        if interop == .copy && session.kind == .v4l2m2m && session.hardwareFormat == AV_PIX_FMT_DRM_PRIME && !givesMemoryFrames {
            // The first frame was never handed out: the reopened decoder starts from the start.
            delivered = 0
            lastDelivered = nil
            try leaveDRMPrimeDecoder(reason: choice.reason)
        }
    }

    /// A v4l2m2m decoder asked for DRM PRIME frames cannot copy them to memory: reopen it for
    /// memory frames at the same position (software when that fails).
    func leaveDRMPrimeDecoder(reason: String) throws {
        guard session.kind == .v4l2m2m, session.hardwareFormat == AV_PIX_FMT_DRM_PRIME else { return }
        do {
            let memory = try sessions.hardware(.v4l2m2m, software: softwareDecoder, stream: stream, uri: uri, drmPrime: false)
            try restart(with: memory)
        } catch let error as MediaError {
            try switchToSoftware(reason: "reopening v4l2m2m for memory frames (\(reason)): \(error.call) failed: \(error.reason)")
        }
    }

    /// The display could not import a frame: copy the rest of the item's frames.
    func fallBackToCopy(_ reason: String) throws {
        interop = .copy
        decodingPath.interop = FrameInterop.copy.rawValue
        decodingPath.interopReason = "DMA-BUF import failed (\(reason)); frames copied for the rest of the item"
        decodingPath.interopFellBack = true
        try leaveDRMPrimeDecoder(reason: reason)
    }

    /// Counts a failure. A hardware path that fails before its first frame or three times in a row
    /// hands over to software at the same position; software gives up after 16 failures in a row.
    func countError(call: String, code: Int32) throws {
        consecutiveErrors += 1
        lastFailure = MediaError(uri: uri, call: call, averror: code)
        let fallible = !switched && session.handsOverOnFailure
        if fallible && (delivered == 0 || consecutiveErrors >= 3) {
            try switchToSoftware(reason: "\(call) failed: \(ffmpegErrorString(code))")
        } else if consecutiveErrors >= 16 {
            throw MediaError(uri: uri, call: call, averror: code)
        }
    }

    /// Replaces the decoding session with software and seeks back to the last keyframe before the
    /// last frame handed out; frames up to that one are decoded again and skipped, so the picture
    /// goes on from the next frame without a gap.
    func switchToSoftware(reason: String) throws {
        let failed = session.path.hwdecCurrent
        let software = try sessions.software(softwareDecoder, stream: stream, threads: threads, uri: uri)
        switched = true
        interop = .none
        decodingPath = DecodingPath(hwdecCurrent: "no", interop: "none",
                                    fallbackReason: "\(failed == "no" ? "decoder" : failed) failed mid-stream: \(reason)",
                                    degraded: true, interopReason: "software decoding")
        try restart(with: software)
    }

    /// Decodes with `newSession` from the position of the last frame handed out (see
    /// `switchToSoftware`).
    func restart(with newSession: CodecSession) throws {
        session = newSession
        av_frame_free(&pending)
        consecutiveErrors = 0
        if let last = lastDelivered {
            try loop.seek(to: last)
            skipThrough = last
        } else {
            try loop.seekToStart()
        }
    }
}
