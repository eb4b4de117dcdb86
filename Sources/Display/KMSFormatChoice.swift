import Render

/// `display.format`: the scan-out pixel format asked for.
public enum KMSPixelFormat: String, Sendable, CaseIterable {
    /// 8 bits per colour: what every KMS driver scans out (the default, and the fallback).
    case xrgb8888
    /// 10 bits per colour, used where the plane, GBM and EGL all have it.
    case xrgb2101010

    /// The DRM fourcc name: `XR24`, `XR30`.
    public var fourcc: String { scanout.description }
    public var bitsPerChannel: Int { self == .xrgb8888 ? 8 : 10 }
    var scanout: ScanoutFormat { self == .xrgb8888 ? .xrgb8888 : .xrgb2101010 }
    init?(_ format: ScanoutFormat) {
        guard let known = Self.allCases.first(where: { $0.scanout == format }) else { return nil }
        self = known
    }
}

/// What a device reports for scan-out formats: the fourccs its primary plane lists (`drmModePlane`
/// formats), the formats GBM can scan out and render to (`gbm_device_is_format_supported`), and
/// those an EGL window config has as its native visual with channels of the format's size.
public struct ScanoutFormatReport: Sendable {
    public var plane: Set<String>
    public var gbm: Set<KMSPixelFormat>
    public var egl: Set<KMSPixelFormat>
    public init(plane: Set<String>, gbm: Set<KMSPixelFormat>, egl: Set<KMSPixelFormat>) {
        self.plane = plane
        self.gbm = gbm
        self.egl = egl
    }
}

/// The format an output scans out, and why it is not the one asked for (empty when it is).
public struct ScanoutFormatChoice: Sendable, Equatable {
    public let format: KMSPixelFormat
    public let missing: [String]
}

/// `wanted` where the plane, GBM and EGL all have it; else XRGB8888, with what was missing.
public func chooseScanoutFormat(_ wanted: KMSPixelFormat, report: ScanoutFormatReport) -> ScanoutFormatChoice {
    guard wanted != .xrgb8888 else { return ScanoutFormatChoice(format: .xrgb8888, missing: []) }
    var missing: [String] = []
    if !report.plane.contains(wanted.fourcc) {
        missing.append("the primary plane does not list \(wanted.fourcc) (it lists \(report.plane.sorted().joined(separator: ", ")))")
    }
    if !report.gbm.contains(wanted) {
        missing.append("GBM cannot make a scan-out surface in \(wanted.fourcc) (gbm_device_is_format_supported)")
    }
    if !report.egl.contains(wanted) {
        missing.append("EGL has no window config with native visual \(wanted.fourcc) and \(wanted.bitsPerChannel)-bit channels")
    }
    return ScanoutFormatChoice(format: missing.isEmpty ? wanted : .xrgb8888, missing: missing)
}
