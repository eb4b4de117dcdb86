import Foundation
import CEGL
import CGLES

/// A failing EGL or GL call: names the call and its error code.
public struct RenderError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let call: String
    public let code: UInt32
    public let detail: String

    public init(call: String, code: UInt32 = 0, detail: String = "") {
        self.call = call
        self.code = code
        self.detail = detail
    }

    /// The error of the last EGL call on this thread.
    static func egl(_ call: String, detail: String = "") -> RenderError {
        RenderError(call: call, code: UInt32(eglGetError()), detail: detail)
    }

    public var description: String {
        var text = "\(call) failed"
        if code != 0 { text += " (0x\(String(code, radix: 16)))" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }
}

/// Throws when the GL error flag is set, naming `call`.
func checkGL(_ call: String) throws {
    let error = glGetError()
    if error != GLenum(GL_NO_ERROR) { throw RenderError(call: call, code: error) }
}
