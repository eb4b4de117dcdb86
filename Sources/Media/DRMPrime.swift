import CFFmpeg
import Foundation
import Synchronization
import Playback

/// How decoded hardware frames reach the display (`hwdec-interop`).
public enum FrameInterop: String, Sendable, CaseIterable {
    /// DRM PRIME frames imported as EGLImages: no copy.
    case dmabuf
    /// Frames copied back to memory (`av_hwframe_transfer_data`) and uploaded.
    case copy
    /// Software decoding: frames are in memory already.
    case none
}

/// The interop a decoder uses for its item, and why.
public struct InteropChoice: Sendable, Equatable {
    public var interop: FrameInterop
    public var reason: String
    public init(_ interop: FrameInterop, _ reason: String) {
        self.interop = interop
        self.reason = reason
    }
}

/// A picture in DMA-BUF memory as FFmpeg's `AVDRMFrameDescriptor` describes it: the buffers
/// (objects) and the layers (each a DRM format whose planes sit in those objects). The file
/// descriptors are numbers only: they stay owned by the frame (`DRMPrimeFrame`) they were read from
/// and are valid while it lives.
public struct DRMPrimeDescriptor: Sendable, Equatable {
    public struct Object: Sendable, Equatable {
        public var fd: Int32
        public var size: Int
        /// DRM format modifier (tiling); 0 is linear, `0x00ffffffffffffff` "none given".
        public var modifier: UInt64
        public init(fd: Int32, size: Int, modifier: UInt64) {
            self.fd = fd
            self.size = size
            self.modifier = modifier
        }
    }
    public struct Plane: Sendable, Equatable {
        /// Index into `objects`.
        public var object: Int
        public var offset: Int
        public var pitch: Int
        public init(object: Int, offset: Int, pitch: Int) {
            self.object = object
            self.offset = offset
            self.pitch = pitch
        }
    }
    public struct Layer: Sendable, Equatable {
        /// DRM fourcc of the layer (`NV12`, or `R8  ` and `GR88` for separate layers).
        public var fourcc: UInt32
        public var planes: [Plane]
        public init(fourcc: UInt32, planes: [Plane]) {
            self.fourcc = fourcc
            self.planes = planes
        }
    }
    public var width: Int
    public var height: Int
    public var objects: [Object]
    public var layers: [Layer]

    public init(width: Int, height: Int, objects: [Object], layers: [Layer]) {
        self.width = width
        self.height = height
        self.objects = objects
        self.layers = layers
    }

    /// Reads FFmpeg's descriptor (the `data[0]` of an `AV_PIX_FMT_DRM_PRIME` frame).
    init(_ d: UnsafePointer<AVDRMFrameDescriptor>, width: Int, height: Int) {
        var objects: [Object] = []
        var layers: [Layer] = []
        withUnsafeBytes(of: d.pointee.objects) { raw in
            let all = raw.bindMemory(to: AVDRMObjectDescriptor.self)
            for o in all.prefix(Int(max(0, min(d.pointee.nb_objects, Int32(AV_DRM_MAX_PLANES))))) {
                objects.append(Object(fd: o.fd, size: o.size, modifier: o.format_modifier))
            }
        }
        withUnsafeBytes(of: d.pointee.layers) { raw in
            let all = raw.bindMemory(to: AVDRMLayerDescriptor.self)
            for l in all.prefix(Int(max(0, min(d.pointee.nb_layers, Int32(AV_DRM_MAX_PLANES))))) {
                var planes: [Plane] = []
                withUnsafeBytes(of: l.planes) { rawPlanes in
                    let p = rawPlanes.bindMemory(to: AVDRMPlaneDescriptor.self)
                    for plane in p.prefix(Int(max(0, min(l.nb_planes, Int32(AV_DRM_MAX_PLANES))))) {
                        planes.append(Plane(object: Int(plane.object_index), offset: plane.offset, pitch: plane.pitch))
                    }
                }
                layers.append(Layer(fourcc: l.format, planes: planes))
            }
        }
        self.init(width: width, height: height, objects: objects, layers: layers)
    }

    /// A DRM fourcc from its four characters ("NV12").
    public static func fourcc(_ code: String) -> UInt32 {
        code.utf8.prefix(4).enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// The fourcc as text, for messages.
    public static func fourccName(_ value: UInt32) -> String {
        String((0..<4).map { Character(UnicodeScalar(UInt8((value >> (8 * $0)) & 0xff))) })
    }
}

/// The one way back from the display to a decoder, made when the decoder opens and carried by
/// each of its DMA-BUF frames: a one-shot flag the layer raises when it cannot import one (it
/// draws that frame copied); the decoder reads it before each frame and copies the rest of its
/// item. Set once (later reports are ignored), never waited for.
final class InteropFeedback: Sendable {
    private let failure = Mutex<String?>(nil)
    func report(_ reason: String) { failure.withLock { if $0 == nil { $0 = reason } } }
    var reported: String? { failure.withLock { $0 } }
}

/// A decoded picture that stays in DMA-BUF memory: owns a reference to a DRM PRIME `AVFrame`
/// (whose buffers hold the DMA-BUF file descriptors: they are FFmpeg's, closed when the last
/// reference goes) and, for VAAPI, to the hardware frame it was mapped from (kept so that it can
/// still be copied to memory if the display cannot import it).
public final class DRMPrimeFrame: @unchecked Sendable {
    // @unchecked: the frames are never mutated after init and are released only in deinit.
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var source: UnsafeMutablePointer<AVFrame>?
    public let descriptor: DRMPrimeDescriptor
    /// The decoded layout (`nv12`, `p010le`) as FFmpeg's software format names it, when known.
    public let softwareFormat: String?
    private let feedback: InteropFeedback
    private let uri: String

    /// Maps `hardware` (a VAAPI frame) to DRM PRIME with `av_hwframe_map`, or (already DRM PRIME,
    /// from `drm` and `v4l2m2m`) takes a new reference to it. `hardware` stays the caller's.
    init(hardware: UnsafeMutablePointer<AVFrame>, feedback: InteropFeedback, uri: String) throws {
        self.feedback = feedback
        self.uri = uri
        if let frames = hardware.pointee.hw_frames_ctx {
            let sw = frames.pointee.data.withMemoryRebound(to: AVHWFramesContext.self, capacity: 1) { $0.pointee.sw_format }
            softwareFormat = av_get_pix_fmt_name(sw).map { String(cString: $0) }
        } else {
            softwareFormat = nil
        }
        // Until the descriptor is read these frames are this init's own: a throw before then
        // skips deinit (the object is not fully made), so they are freed here.
        var mapped: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        var kept: UnsafeMutablePointer<AVFrame>?
        var made = false
        defer {
            if !made {
                av_frame_free(&mapped)
                av_frame_free(&kept)
            }
        }
        guard let target = mapped else { throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory") }
        if hardware.pointee.format == AV_PIX_FMT_DRM_PRIME.rawValue {
            let r = av_frame_ref(target, hardware)
            if r < 0 { throw MediaError(uri: uri, call: "av_frame_ref(DRM PRIME)", averror: r) }
        } else {
            target.pointee.format = AV_PIX_FMT_DRM_PRIME.rawValue
            // READ: the display only samples it; DIRECT: the buffers themselves, never a copy.
            // The mapping holds a reference to `hardware` (the VAAPI surface) until it is unref'd.
            let r = av_hwframe_map(target, hardware, Int32(AV_HWFRAME_MAP_READ | AV_HWFRAME_MAP_DIRECT))
            if r < 0 { throw MediaError(uri: uri, call: "av_hwframe_map(DRM PRIME)", averror: r) }
            _ = av_frame_copy_props(target, hardware)  // colour tags and timestamps only
            kept = av_frame_alloc()
            guard let kept else { throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory") }
            let k = av_frame_ref(kept, hardware)
            if k < 0 { throw MediaError(uri: uri, call: "av_frame_ref(hardware frame)", averror: k) }
        }
        guard let data = target.pointee.data.0 else {
            throw MediaError(uri: uri, call: "av_hwframe_map(DRM PRIME)", reason: "the frame carries no AVDRMFrameDescriptor")
        }
        descriptor = data.withMemoryRebound(to: AVDRMFrameDescriptor.self, capacity: 1) {
            DRMPrimeDescriptor($0, width: Int(hardware.pointee.width), height: Int(hardware.pointee.height))
        }
        frame = target  // owned from here; freed in deinit
        source = kept
        made = true
    }

    deinit {
        av_frame_free(&frame)
        av_frame_free(&source)
    }

    /// Tells the decoder that this frame could not be imported: it copies its frames to memory for
    /// the rest of the item (once; later reports are ignored).
    public func reportImportFailure(_ reason: String) { feedback.report(reason) }

    /// The picture copied to memory (`av_hwframe_transfer_data` from the hardware frame, or from
    /// the DRM PRIME frame where it has no other). The caller owns the returned frame.
    func download() throws -> UnsafeMutablePointer<AVFrame> {
        guard let from = source ?? frame else { throw MediaError(uri: uri, call: "av_hwframe_transfer_data", reason: "no frame") }
        // FFmpeg dereferences the source's frames context unchecked (a crash, not an error): a
        // DRM PRIME frame without one (some v4l2m2m builds) cannot be copied.
        guard from.pointee.hw_frames_ctx != nil else {
            throw MediaError(uri: uri, call: "av_hwframe_transfer_data(DRM PRIME)", reason: "the frame has no hardware frames context to copy from")
        }
        guard let copy = av_frame_alloc() else { throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory") }
        var r = av_hwframe_transfer_data(copy, from, 0)
        if r >= 0 { r = av_frame_copy_props(copy, from) }
        guard r >= 0 else {
            var failed: UnsafeMutablePointer<AVFrame>? = copy
            av_frame_free(&failed)
            throw MediaError(uri: uri, call: "av_hwframe_transfer_data(DRM PRIME)", averror: r)
        }
        return copy
    }
}

/// The display side of zero-copy: decides, once per decoder (item), whether its frames are
/// imported as DMA-BUFs or copied. Implemented by `Render` (`DMABufInterop`, from the output's
/// capabilities) and given to the backend when it is made, after the output has opened.
public protocol FrameInteropTarget: Sendable {
    /// - Parameters:
    ///   - hardware: the hardware path in use.
    ///   - firstFrame: the first frame's DRM PRIME descriptor, the reason the path gives none
    ///     (CUDA frames, a decoder that gave memory frames, a failed map).
    func chooseInterop(hardware: HardwareDecoding, firstFrame: Result<DRMPrimeDescriptor, MediaError>) -> InteropChoice
}

extension DRMPrimeFrame {
    /// A DMA-BUF picture made outside FFmpeg (a capture device, another process), described by
    /// `descriptor`, shown like a decoder's DRM PRIME frame (as a v4l2m2m decoder gives one: no
    /// hardware frames context, so it cannot be copied to memory). The descriptor's fds stay the
    /// caller's: they must stay open while the frame lives and are never closed by it. A display
    /// that cannot import it says why in `importFailure`.
    public convenience init(external descriptor: DRMPrimeDescriptor) throws {
        let uri = "external DMA-BUF frame"
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let frame, let buffer = av_buffer_allocz(MemoryLayout<AVDRMFrameDescriptor>.size) else {
            throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory")
        }
        frame.pointee.buf.0 = buffer  // owned by the frame from here
        buffer.pointee.data.withMemoryRebound(to: AVDRMFrameDescriptor.self, capacity: 1) { d in
            // At most AV_DRM_MAX_PLANES of each (what the C arrays hold); values clamped, not trapped on.
            d.pointee.nb_objects = Int32(min(descriptor.objects.count, Int(AV_DRM_MAX_PLANES)))
            withUnsafeMutableBytes(of: &d.pointee.objects) { raw in
                let objects = raw.bindMemory(to: AVDRMObjectDescriptor.self)
                for (i, o) in descriptor.objects.prefix(objects.count).enumerated() {
                    objects[i] = AVDRMObjectDescriptor(fd: o.fd, size: o.size, format_modifier: o.modifier)
                }
            }
            d.pointee.nb_layers = Int32(min(descriptor.layers.count, Int(AV_DRM_MAX_PLANES)))
            withUnsafeMutableBytes(of: &d.pointee.layers) { raw in
                let layers = raw.bindMemory(to: AVDRMLayerDescriptor.self)
                for (i, l) in descriptor.layers.prefix(layers.count).enumerated() {
                    layers[i].format = l.fourcc
                    layers[i].nb_planes = Int32(min(l.planes.count, Int(AV_DRM_MAX_PLANES)))
                    withUnsafeMutableBytes(of: &layers[i].planes) { rawPlanes in
                        let planes = rawPlanes.bindMemory(to: AVDRMPlaneDescriptor.self)
                        for (j, p) in l.planes.prefix(planes.count).enumerated() {
                            planes[j] = AVDRMPlaneDescriptor(object_index: Int32(clamping: p.object), offset: p.offset, pitch: p.pitch)
                        }
                    }
                }
            }
        }
        frame.pointee.data.0 = buffer.pointee.data
        frame.pointee.format = AV_PIX_FMT_DRM_PRIME.rawValue
        frame.pointee.width = Int32(clamping: descriptor.width)
        frame.pointee.height = Int32(clamping: descriptor.height)
        try self.init(hardware: frame, feedback: InteropFeedback(), uri: uri)
    }

    /// Why the display could not import this frame (the first reason reported), nil while none was.
    public var importFailure: String? { feedback.reported }
}
