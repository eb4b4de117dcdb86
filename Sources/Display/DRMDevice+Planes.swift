import CDRM
import Foundation
import Media

extension DRMDevice {
    /// The planes that can show on CRTC number `crtcIndex` (nil: all the card's planes), described for `choosePlaneRoute`:
    /// type, formats, `IN_FORMATS` modifiers, property names and the values of `rotation`,
    /// `COLOR_ENCODING` and `COLOR_RANGE`. A plane whose `IN_FORMATS` blob cannot be read is
    /// described without modifiers (linear only) and named in `problems`.
    func describePlanes(crtcIndex: Int?) throws -> (planes: [PlaneDescription], problems: [String]) {
        guard let resources = drmModeGetPlaneResources(fd) else {
            throw DRMError(call: "drmModeGetPlaneResources", errno: errno)
        }
        defer { drmModeFreePlaneResources(resources) }
        var planes: [PlaneDescription] = []
        var problems: [String] = []
        for id in UnsafeBufferPointer(start: resources.pointee.planes, count: Int(resources.pointee.count_planes)) {
            guard let plane = drmModeGetPlane(fd, id) else { continue }
            defer { drmModeFreePlane(plane) }
            if let crtcIndex {
                guard crtcIndex < 32, plane.pointee.possible_crtcs & (1 << UInt32(crtcIndex)) != 0 else { continue }
            }
            let formats = Array(UnsafeBufferPointer(start: plane.pointee.formats, count: Int(plane.pointee.count_formats)))
            var description = PlaneDescription(id: id, kind: .overlay, formats: formats)
            guard let props = drmModeObjectGetProperties(fd, id, UInt32(DRM_MODE_OBJECT_PLANE)) else {
                problems.append("plane \(id): drmModeObjectGetProperties failed (errno \(errno))")
                continue
            }
            defer { drmModeFreeObjectProperties(props) }
            for i in 0..<Int(props.pointee.count_props) {
                guard let prop = drmModeGetProperty(fd, props.pointee.props[i]) else { continue }
                defer { drmModeFreeProperty(prop) }
                let name = withUnsafeBytes(of: prop.pointee.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                let value = props.pointee.prop_values[i]
                description.properties.insert(name)
                let bitmask = prop.pointee.flags & UInt32(DRM_MODE_PROP_BITMASK) != 0
                let enums = Array(UnsafeBufferPointer(start: prop.pointee.enums, count: Int(prop.pointee.count_enums))).map { e in
                    (withUnsafeBytes(of: e.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) },
                     // A bitmask's enum values are bit numbers; what is set is the bit.
                     bitmask ? (e.value < 64 ? UInt64(1) << e.value : 0) : e.value)
                }
                switch name {
                case "type":
                    description.kind = value == UInt64(DRM_PLANE_TYPE_PRIMARY) ? .primary : value == UInt64(DRM_PLANE_TYPE_CURSOR) ? .cursor : .overlay
                case "rotation": description.rotations = Dictionary(enums) { first, _ in first }
                case "COLOR_ENCODING": description.colorEncodings = Dictionary(enums) { first, _ in first }
                case "COLOR_RANGE": description.colorRanges = Dictionary(enums) { first, _ in first }
                case "IN_FORMATS":
                    guard let bytes = blobBytes(UInt32(truncatingIfNeeded: value)) else {
                        problems.append("plane \(id): its IN_FORMATS blob \(value) cannot be read")
                        continue
                    }
                    do {
                        description.modifiers = try PlaneFormatModifiers(blob: bytes).modifiers
                    } catch {
                        problems.append("plane \(id): \(error)")
                    }
                default: break
                }
            }
            planes.append(description)
        }
        return (planes, problems)
    }
}
