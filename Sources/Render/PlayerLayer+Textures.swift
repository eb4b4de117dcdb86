import CGLES
import Media
import Playback

// The layer's textures: the planes uploaded into textures made once per size and format, and
// the EGL images of DMA-BUF frames, each released one draw call after its frame was last drawn.

extension PlayerLayer {
    /// Uploads the planes; a texture is (re)made only when its plane's size or storage format
    /// changes, and padded rows are read in place through `GL_UNPACK_ROW_LENGTH`.
    func upload(_ frame: VideoFrame, integer: Bool) throws {
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        try frame.withPlanes { planes in
            for i in 0..<planes.count {
                let plane = planes[i]
                let storage = TextureStorage(plane, integer: integer)
                glActiveTexture(GLenum(GL_TEXTURE0 + Int32(i)))
                if textures[i].width != plane.width || textures[i].height != plane.height || textures[i].storage != storage {
                    try remakeTexture(i, width: plane.width, height: plane.height, storage: storage)
                } else {
                    glBindTexture(GLenum(GL_TEXTURE_2D), textures[i].name)
                }
                glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(plane.bytesPerRow / plane.bytesPerTexel))
                glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, 0, 0, GLsizei(plane.width), GLsizei(plane.height),
                                storage.format, storage.type, plane.bytes)
            }
        }
        glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
        try checkGL("glTexSubImage2D")
    }

    /// Converts a Y'CbCr frame to RGBA (the cpu colour conversion) into the first texture, a
    /// band of rows at a time through the converter's one small buffer: no RGBA frame is made.
    /// With `bottomUp` the picture is stored bottom-up where it comes in bands (row 0 of the
    /// texture is its last row: GL's order, so that a 1:1 copy needs no flip); returns whether it
    /// was. (Converting the bands on a worker thread instead made pictures late at real time on a
    /// busy machine: each band waited for that thread to be scheduled.)
    @discardableResult
    func uploadConverted(_ frame: VideoFrame, bottomUp: Bool = false) throws -> Bool {
        glActiveTexture(GLenum(GL_TEXTURE0))
        let storage = TextureStorage.rgba
        if textures[0].width != frame.width || textures[0].height != frame.height || textures[0].storage != storage {
            try remakeTexture(0, width: frame.width, height: frame.height, storage: storage)
        } else {
            glBindTexture(GLenum(GL_TEXTURE_2D), textures[0].name)
        }
        let flipped = bottomUp && RGBAConverter.convertsInBands(frame)
        try convertIntoBoundTexture(frame, flipped: flipped, x: 0, y: 0)
        try checkGL("glTexSubImage2D(converted to RGBA)")
        return flipped
    }

    /// Converts `frame` to RGBA (in bands, with the layer's one converter) into the bound 2D
    /// texture, the picture's rows from (`x`, `y`) on; `flipped`: its bottom row first, as GL
    /// stores a picture it shows.
    func convertIntoBoundTexture(_ frame: VideoFrame, flipped: Bool, x: Int, y: Int) throws {
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        defer { glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0) }
        let converter = rgbaConverter ?? RGBAConverter()
        rgbaConverter = converter
        try converter.convertInBands(frame, flipped: flipped) { firstRow, band in
            glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(band.bytesPerRow / band.bytesPerTexel))
            let row = flipped ? frame.height - firstRow - band.height : firstRow
            glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, GLint(x), GLint(y + row), GLsizei(band.width), GLsizei(band.height),
                            GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), band.bytes)
        }
    }

    func remakeTexture(_ i: Int, width: Int, height: Int, storage: TextureStorage) throws {
        // Immutable storage cannot be resized: a new size or format gets a new texture.
        if textures[i].name != 0 { glDeleteTextures(1, &textures[i].name) }
        glGenTextures(1, &textures[i].name)
        glBindTexture(GLenum(GL_TEXTURE_2D), textures[i].name)
        let filter = storage.filterable ? GL_LINEAR : GL_NEAREST
        textures[i].filter = filter
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), filter)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), filter)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_S), GL_CLAMP_TO_EDGE)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_T), GL_CLAMP_TO_EDGE)
        glTexStorage2D(GLenum(GL_TEXTURE_2D), 1, storage.internalFormat, GLsizei(width), GLsizei(height))
        try checkGL("glTexStorage2D(\(width)x\(height), 0x\(String(storage.internalFormat, radix: 16)))")
        textures[i].width = width
        textures[i].height = height
        textures[i].storage = storage
        textureAllocations += 1
        lastState = nil  // the chroma offset depends on the texture size
    }

    /// A new draw call: the last call's imports may be reused; the rest are released when it ends.
    func beginImports() {
        previousImports = imports
        imports = []
    }

    /// The EGL image of a DMA-BUF frame: the one made for it by the last draw call, or a new one.
    func importFrame(_ frame: VideoFrame, _ prime: DRMPrimeFrame) throws -> DMABufTexture {
        if let done = imports.first(where: { $0.frame === frame }) ?? previousImports.first(where: { $0.frame === frame }) {
            if !imports.contains(where: { $0.frame === frame }) { imports.append(done) }
            return done.texture
        }
        guard let dmabufImporter else {
            throw RenderError(call: "PlayerLayer.draw", detail: "a DMA-BUF frame and no DMABufImporter on this layer")
        }
        let descriptor = try DMABufDescriptor(prime: prime.descriptor, colorMatrix: frame.colorMatrix,
                                              colorRange: frame.colorRange, chromaLocation: frame.chromaLocation)
        let texture = try dmabufImporter.importImage(descriptor)
        imports.append(ImportedFrame(frame: frame, texture: texture))
        return texture
    }
}

/// A texture's storage: sized internal format, and the upload's format and type.
struct TextureStorage: Equatable {
    var internalFormat: GLenum = 0
    var format: GLenum = 0
    var type: GLenum = 0
    var filterable = true

    init() {}

    /// One 8-bit RGBA plane.
    static let rgba = TextureStorage(internalFormat: GLenum(GL_RGBA8), format: GLenum(GL_RGBA), type: GLenum(GL_UNSIGNED_BYTE))

    private init(internalFormat: GLenum, format: GLenum, type: GLenum) {
        self.internalFormat = internalFormat
        self.format = format
        self.type = type
    }

    init(_ plane: Plane, integer: Bool) {
        let two = plane.components == 2
        if plane.components == 4 {
            internalFormat = GLenum(GL_RGBA8)
            format = GLenum(GL_RGBA)
            type = GLenum(GL_UNSIGNED_BYTE)
        } else if plane.bytesPerSample == 1 {
            internalFormat = GLenum(two ? GL_RG8 : GL_R8)
            format = GLenum(two ? GL_RG : GL_RED)
            type = GLenum(GL_UNSIGNED_BYTE)
        } else if integer {
            internalFormat = GLenum(two ? GL_RG16UI : GL_R16UI)
            format = GLenum(two ? GL_RG_INTEGER : GL_RED_INTEGER)
            type = GLenum(GL_UNSIGNED_SHORT)
            filterable = false
        } else {
            internalFormat = GLenum(two ? GL_RG16_EXT : GL_R16_EXT)
            format = GLenum(two ? GL_RG : GL_RED)
            type = GLenum(GL_UNSIGNED_SHORT)
        }
    }
}

struct PlaneTexture {
    var name: GLuint = 0
    var width = 0
    var height = 0
    var storage = TextureStorage()
    /// GL_NEAREST or GL_LINEAR, as set on the texture.
    var filter = GL_LINEAR
}

/// A DMA-BUF frame and its EGL image: the image is destroyed (with its texture) before the frame
/// is let go, so it never outlives the buffers it shows. Released one draw call after the frame was
/// last drawn, when that picture has been flushed and shown.
final class ImportedFrame {
    let frame: VideoFrame
    private(set) var image: DMABufTexture?
    var texture: DMABufTexture { image! }
    init(frame: VideoFrame, texture: DMABufTexture) {
        self.frame = frame
        image = texture
    }
    deinit { image = nil }  // the EGL image first; the frame (and the decoder's buffers) after it
}
