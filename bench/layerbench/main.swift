// layerbench: upload + draw time of one 1080p frame per pixel format on the headless output
// (EGL surfaceless; llvmpipe where there is no GPU). Called by `make bench`.
//
// Usage: layerbench [--frames N] [--size WxH]
// Prints one line per format: format, milliseconds per frame (mean, and the fastest), texture
// allocations over the run (stays at the plane count: textures are reused). The 10-bit formats are
// measured a second time through the integer-texture path (GPUs without GL_EXT_texture_norm16).
import Display
import Foundation
import Media
import Playback
import Render

var frames = 60
var width = 1920, height = 1080
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--frames":
        guard let n = arguments.next().flatMap(Int.init), n > 0 else { fatalError("--frames needs a positive count") }
        frames = n
    case "--size":
        let parts = arguments.next()?.split(separator: "x").compactMap { Int($0) } ?? []
        guard parts.count == 2, parts.allSatisfy({ $0 > 0 && $0 <= 8192 }) else { fatalError("--size needs WxH, e.g. 1920x1080") }
        (width, height) = (parts[0], parts[1])
    default:
        FileHandle.standardError.write(Data("usage: layerbench [--frames N] [--size WxH] \n".utf8))
        exit(2)
    }
}

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// Mean and best seconds of `frames` calls of `present` (each finished with glFinish).
func measure(frames: Int, _ present: (Int) throws -> Void) throws -> (mean: Double, best: Double) {
    try present(0)  // warm-up: textures, program
    glFinishRenderer()
    var total = 0.0, best = Double.infinity
    for i in 0..<frames {
        let start = now()
        try present(i)
        glFinishRenderer()  // upload + draw done
        let elapsed = now() - start
        total += elapsed
        best = min(best, elapsed)
    }
    return (total / Double(frames), best)
}

func report(_ name: String, _ result: (mean: Double, best: Double), textures: Int) {
    print([name.padding(toLength: 26, withPad: " ", startingAt: 0),
           String(format: "%7.2f ms/frame", result.mean * 1000),
           String(format: "(best %6.2f)", result.best * 1000),
           "textures \(textures)"].joined(separator: "  "))
}

do {
    let mode = DisplayMode(width: width, height: height, refresh: RefreshRate(numerator: 60))
    var renderer = ""
    for format in Media.PixelFormat.allCases {
        // Two different frames alternate so nothing can be skipped as unchanged.
        let maxCode = (1 << format.bitsPerSample) - 1
        let pair = try (0..<2).map { k in
            try VideoFrame(format: format, width: width, height: height, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
                (x * (c + 3) + y * 5 + k * 37) % maxCode
            }
        }
        do {
            // A fresh output per format, so each starts with no textures.
            let output = try HeadlessOutput(mode: mode, clock: .virtual)
            if renderer.isEmpty {
                renderer = output.context.renderer
                print("layerbench: upload + draw of one \(width)x\(height) frame on a \(width)x\(height) headless output (\(renderer)), \(frames) frames each")
            }
            let result = try measure(frames: frames) { i in try output.draw([pair[i % 2]]) }
            report("\(format.rawValue) (\(format.bitsPerSample > 8 ? output.layer.highDepthSampling.rawValue : "8-bit"))",
                   result, textures: output.layer.textureAllocations)
        }
        if format.isYCbCr {
            // The cpu colour conversion: the layer converts to RGBA with swscale as it uploads,
            // then draws one texture.
            let output = try HeadlessOutput(mode: mode, clock: .virtual)
            output.layer.colorConversion = .cpu
            let result = try measure(frames: frames) { i in try output.draw([pair[i % 2]]) }
            report("\(format.rawValue) (cpu)", result, textures: output.layer.textureAllocations)
        }
        if format.bitsPerSample > 8 {
            let context = try GLContext.surfaceless()
            let target = try Framebuffer(width: width, height: height)
            let layer = try PlayerLayer(highDepthSampling: .integer)
            let bounds = PixelRect(x: 0, y: 0, width: width, height: height)
            let result = try measure(frames: frames) { i in
                target.bind()
                try layer.draw(pair[i % 2], bounds: bounds)
            }
            report("\(format.rawValue) (integer)", result, textures: layer.textureAllocations)
            _ = context
        }
    }
} catch {
    FileHandle.standardError.write(Data("layerbench: \(error)\n".utf8))
    exit(1)
}
