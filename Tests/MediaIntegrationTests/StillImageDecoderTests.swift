import Foundation
import Media
import Testing
import TestSupport
@testable import MediaTests

@Suite struct StillImageDecoderTests {
    /// An image whose stated size would take more than 256 MB as RGBA is refused with its size,
    /// before its pixels are allocated; one just under the limit decodes.
    @Test func aPictureOverSixtyFourMegapixelsIsRefusedWithItsSize() throws {
        func png(_ width: Int, _ height: Int) throws -> String {
            try TestMedia.make("still-black-\(width)x\(height).png", [
                "-f", "lavfi", "-i", "color=c=black:size=\(width)x\(height),format=gray", "-frames:v", "1",
                "-c:v", "png", "-f", "image2", "-update", "1",
            ])
        }
        let tooBig = try png(8200, 8200)
        #expect {
            _ = try StillImageDecoder.decodeRGBA(path: tooBig)
        } throws: { error in
            "\(error)".contains("8200x8200") && "\(error)".contains("64 megapixels")
        }
        let picture = try StillImageDecoder.decodeRGBA(path: try png(64, 48))
        #expect(picture.width == 64 && picture.height == 48)
    }
}
