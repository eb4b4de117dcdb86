import CEGL
import Media
import Playback
import Render
import Testing

/// The DRM PRIME descriptor -> EGL image mapping and the interop choice: pure logic, no GPU.
@Suite struct DMABufMappingTests {
    static let yTiled: UInt64 = 0x0100_0000_0000_0002  // I915_FORMAT_MOD_Y_TILED
    let fourcc = DRMPrimeDescriptor.fourcc

    /// VAAPI's export of a 1920x1080 NV12 surface: one buffer, a luma layer and a chroma layer.
    func vaapiNV12(modifier: UInt64 = yTiled, secondObject: Bool = false) -> DRMPrimeDescriptor {
        var objects = [DRMPrimeDescriptor.Object(fd: 41, size: 3_276_800, modifier: modifier)]
        if secondObject { objects.append(.init(fd: 42, size: 1_048_576, modifier: modifier)) }
        return DRMPrimeDescriptor(width: 1920, height: 1080, objects: objects, layers: [
            .init(fourcc: fourcc("R8  "), planes: [.init(object: 0, offset: 0, pitch: 2048)]),
            .init(fourcc: fourcc("GR88"), planes: [.init(object: secondObject ? 1 : 0, offset: secondObject ? 0 : 2048 * 1088, pitch: 2048)]),
        ])
    }

    /// The attribute list as key -> value (each key once), checking it is pairs ended by EGL_NONE.
    func pairs(_ list: [Int]) throws -> [Int: Int] {
        try #require(list.count % 2 == 1 && list.last == Int(EGL_NONE))
        var out: [Int: Int] = [:]
        for i in stride(from: 0, to: list.count - 1, by: 2) {
            #expect(out[list[i]] == nil, "attribute 0x\(String(list[i], radix: 16)) given twice")
            out[list[i]] = list[i + 1]
        }
        return out
    }

    @Test func vaapiSeparateLayersBecomeOneNV12ImageWithModifiers() throws {
        let d = try DMABufDescriptor(prime: vaapiNV12(), colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left)
        #expect(d.fourcc == DMABufDescriptor.fourccNV12)
        #expect(d.planes == [DMABufPlane(fd: 41, offset: 0, pitch: 2048), DMABufPlane(fd: 41, offset: 2048 * 1088, pitch: 2048)])
        #expect(d.modifier == Self.yTiled && d.isTiled)
        let a = try pairs(try DMABufImporter.attributes(for: d, modifiersSupported: true))
        #expect(a[Int(EGL_WIDTH)] == 1920 && a[Int(EGL_HEIGHT)] == 1080)
        #expect(a[Int(EGL_LINUX_DRM_FOURCC_EXT)] == Int(fourcc("NV12")))
        #expect(a[Int(EGL_DMA_BUF_PLANE0_FD_EXT)] == 41 && a[Int(EGL_DMA_BUF_PLANE1_FD_EXT)] == 41)
        #expect(a[Int(EGL_DMA_BUF_PLANE0_OFFSET_EXT)] == 0 && a[Int(EGL_DMA_BUF_PLANE1_OFFSET_EXT)] == 2048 * 1088)
        #expect(a[Int(EGL_DMA_BUF_PLANE0_PITCH_EXT)] == 2048 && a[Int(EGL_DMA_BUF_PLANE1_PITCH_EXT)] == 2048)
        for (lo, hi) in [(EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT),
                         (EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT)] {
            #expect(a[Int(lo)] == 2 && a[Int(hi)] == 0x0100_0000)
        }
        #expect(a[Int(EGL_DMA_BUF_PLANE2_FD_EXT)] == nil)
        // BT.709 limited, left-sited chroma (H.264's default): the sampler's hints.
        #expect(a[Int(EGL_YUV_COLOR_SPACE_HINT_EXT)] == Int(EGL_ITU_REC709_EXT))
        #expect(a[Int(EGL_SAMPLE_RANGE_HINT_EXT)] == Int(EGL_YUV_NARROW_RANGE_EXT))
        #expect(a[Int(EGL_YUV_CHROMA_HORIZONTAL_SITING_HINT_EXT)] == Int(EGL_YUV_CHROMA_SITING_0_EXT))
        #expect(a[Int(EGL_YUV_CHROMA_VERTICAL_SITING_HINT_EXT)] == Int(EGL_YUV_CHROMA_SITING_0_5_EXT))
    }

    @Test func tiledBuffersNeedTheModifiersExtension() throws {
        let d = try DMABufDescriptor(prime: vaapiNV12(), colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left)
        let error = try #require(throws: RenderError.self) { try DMABufImporter.attributes(for: d, modifiersSupported: false) }
        #expect(error.description.contains("EGL_EXT_image_dma_buf_import_modifiers"))
    }

    @Test func linearBuffersInTwoObjectsKeepEachPlanesFdAndLeaveModifiersOut() throws {
        for modifier: UInt64 in [0, DMABufDescriptor.modifierInvalid] {
            let d = try DMABufDescriptor(prime: vaapiNV12(modifier: modifier, secondObject: true),
                                         colorMatrix: .bt2020, colorRange: .full, chromaLocation: .center)
            #expect(d.planes.map(\.fd) == [41, 42])
            #expect(!d.isTiled)
            let a = try pairs(try DMABufImporter.attributes(for: d, modifiersSupported: false))
            #expect(a[Int(EGL_DMA_BUF_PLANE0_FD_EXT)] == 41 && a[Int(EGL_DMA_BUF_PLANE1_FD_EXT)] == 42)
            #expect(a[Int(EGL_DMA_BUF_PLANE1_OFFSET_EXT)] == 0)
            #expect(a[Int(EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT)] == nil, "without the extension no modifier is passed")
            let withModifiers = try pairs(try DMABufImporter.attributes(for: d, modifiersSupported: true))
            if modifier == 0 {
                #expect(withModifiers[Int(EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT)] == 0, "linear is said explicitly")
                #expect(withModifiers[Int(EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT)] == 0)
            } else {
                #expect(withModifiers[Int(EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT)] == nil, "no modifier given: none passed")
            }
            #expect(a[Int(EGL_YUV_COLOR_SPACE_HINT_EXT)] == Int(EGL_ITU_REC2020_EXT))
            #expect(a[Int(EGL_SAMPLE_RANGE_HINT_EXT)] == Int(EGL_YUV_FULL_RANGE_EXT))
            #expect(a[Int(EGL_YUV_CHROMA_HORIZONTAL_SITING_HINT_EXT)] == Int(EGL_YUV_CHROMA_SITING_0_5_EXT))
            #expect(a[Int(EGL_YUV_CHROMA_VERTICAL_SITING_HINT_EXT)] == Int(EGL_YUV_CHROMA_SITING_0_5_EXT))
        }
    }

    @Test func oneLayerKeepsItsFormatAndBothPlanes() throws {
        let prime = DRMPrimeDescriptor(width: 1280, height: 720, objects: [.init(fd: 9, size: 1_382_400, modifier: 0)], layers: [
            .init(fourcc: fourcc("P010"), planes: [.init(object: 0, offset: 0, pitch: 2560), .init(object: 0, offset: 2560 * 720, pitch: 2560)]),
        ])
        let d = try DMABufDescriptor(prime: prime, colorMatrix: .bt601, colorRange: .limited, chromaLocation: .topLeft)
        #expect(d.fourcc == DMABufDescriptor.fourccP010 && d.planes.count == 2)
        let a = try pairs(try DMABufImporter.attributes(for: d, modifiersSupported: false))
        #expect(a[Int(EGL_YUV_COLOR_SPACE_HINT_EXT)] == Int(EGL_ITU_REC601_EXT))
        #expect(a[Int(EGL_YUV_CHROMA_HORIZONTAL_SITING_HINT_EXT)] == Int(EGL_YUV_CHROMA_SITING_0_EXT))
        #expect(a[Int(EGL_YUV_CHROMA_VERTICAL_SITING_HINT_EXT)] == Int(EGL_YUV_CHROMA_SITING_0_EXT))
    }

    @Test func separateLayersJoinUnderTheWholePicturesFourcc() throws {
        func joined(_ layers: [String]) throws -> String {
            let prime = DRMPrimeDescriptor(width: 64, height: 64, objects: [.init(fd: 3, size: 8192, modifier: 0)],
                                           layers: layers.enumerated().map { i, f in .init(fourcc: fourcc(f), planes: [.init(object: 0, offset: i * 4096, pitch: 64)]) })
            let d = try DMABufDescriptor(prime: prime, colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left)
            return DRMPrimeDescriptor.fourccName(d.fourcc)
        }
        #expect(try joined(["R8  ", "GR88"]) == "NV12")
        // FFmpeg's vaDeriveImage export (and older Mesa) label NV12's and P010's chroma RG88 and
        // RG1616: the same surfaces, not NV21 (VAAPI decoders give no NV21).
        #expect(try joined(["R8  ", "RG88"]) == "NV12")
        #expect(try joined(["R16 ", "GR32"]) == "P010")
        #expect(try joined(["R16 ", "RG32"]) == "P010")
        #expect(try joined(["R8  ", "R8  ", "R8  "]) == "YU12")
        let error = try #require(throws: RenderError.self) { try joined(["R8  ", "AR24"]) }
        #expect(error.description.contains("no single format for layers R8+AR24"))
    }

    @Test func inconsistentDescriptorsAreRefusedWithTheReason() throws {
        var mixed = vaapiNV12(secondObject: true)
        mixed.objects[1].modifier = 0
        let e1 = try #require(throws: RenderError.self) {
            try DMABufDescriptor(prime: mixed, colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left)
        }
        #expect(e1.description.contains("different modifiers"))
        var outside = vaapiNV12()
        outside.layers[1].planes[0].object = 3
        let e2 = try #require(throws: RenderError.self) {
            try DMABufDescriptor(prime: outside, colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left)
        }
        #expect(e2.description.contains("plane 1 is in object 3 of 1"))
    }

    // MARK: The interop choice

    let full = DMABufDisplaySupport(importsDMABufs: true, importsModifiers: true, samplesExternalImages: true, renderer: "test GPU")

    @Test func dmabufWhenTheFirstFrameIsImportable() {
        let choice = DMABufInterop(support: full).chooseInterop(hardware: .vaapi, firstFrame: .success(vaapiNV12()))
        #expect(choice.interop == .dmabuf)
        var listed = full
        listed.formats = [DMABufDescriptor.fourccP010, DMABufDescriptor.fourccNV12]
        #expect(DMABufInterop(support: listed).chooseInterop(hardware: .vaapi, firstFrame: .success(vaapiNV12())).interop == .dmabuf)
        #expect(choice.reason.contains("NV12") && choice.reason.contains("2 layers joined") && choice.reason.contains("_modifiers"), "\(choice.reason)")
    }

    @Test func copyWithTheReasonOtherwise() {
        var noImport = full
        noImport.importsDMABufs = false
        var noModifiers = full
        noModifiers.importsModifiers = false
        var noExternal = full
        noExternal.samplesExternalImages = false
        var noImporter = full
        noImporter.importerFailure = "eglCreateImage missing"
        var onlyP010 = full
        onlyP010.formats = [DMABufDescriptor.fourccP010, DMABufDescriptor.fourccR8]
        let cases: [(DMABufDisplaySupport, HardwareDecoding, Result<DRMPrimeDescriptor, MediaError>, String)] = [
            (noImport, .vaapi, .success(vaapiNV12()), "lacks EGL_EXT_image_dma_buf_import"),
            (noExternal, .vaapi, .success(vaapiNV12()), "lacks GL_OES_EGL_image_external_essl3"),
            (noImporter, .vaapi, .success(vaapiNV12()), "the output's DMA-BUF importer could not be made: eglCreateImage missing"),
            (onlyP010, .vaapi, .success(vaapiNV12()), "vaapi frames are NV12 and the EGL display does not list it among the DMA-BUF formats it imports (P010, R8)"),
            (noModifiers, .vaapi, .success(vaapiNV12()), "tiled (modifier 0x100000000000002) and the EGL display lacks EGL_EXT_image_dma_buf_import_modifiers"),
            (full, .cuda, .failure(MediaError(uri: "x", call: "DRM PRIME", reason: "CUDA frames are not DMA-BUFs")), "cuda gives no DRM PRIME frames: CUDA frames are not DMA-BUFs"),
            (full, .drm, .success(DRMPrimeDescriptor(width: 8, height: 8, objects: [], layers: [])), "cannot be one EGL image"),
        ]
        for (support, kind, first, reason) in cases {
            let choice = DMABufInterop(support: support).chooseInterop(hardware: kind, firstFrame: first)
            #expect(choice.interop == .copy)
            #expect(choice.reason.contains(reason), "\(choice.reason)")
        }
        // Linear buffers need no modifiers.
        let linear = DMABufInterop(support: noModifiers).chooseInterop(hardware: .v4l2m2m, firstFrame: .success(vaapiNV12(modifier: 0)))
        #expect(linear.interop == .dmabuf, "\(linear.reason)")
    }
}
