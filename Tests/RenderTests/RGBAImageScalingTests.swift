import Render
import Testing

@Suite struct RGBAImageScalingTests {
    /// A 4 x 2 picture to 2 pixels wide: 2 x 1, each pixel the average of its 2 x 2 block.
    @Test func eachPixelIsTheAverageOfItsBlock() {
        let rows: [[UInt8]] = [
            [0, 0, 0, 255, 100, 100, 100, 255, 10, 20, 30, 255, 10, 20, 30, 255],
            [100, 100, 100, 255, 0, 0, 0, 255, 30, 40, 50, 255, 30, 40, 50, 255],
        ]
        let image = RGBAImage(width: 4, height: 2, pixels: rows.flatMap { $0 }, bottomRowFirst: true)
        let small = image.scaledDown(toWidth: 2)
        #expect(small.width == 2 && small.height == 1 && small.bottomRowFirst)
        #expect(small.pixels == [50, 50, 50, 255, 20, 30, 40, 255])
    }

    @Test func aNarrowPictureIsKeptAndTheAspectIsKept() {
        let image = RGBAImage(width: 1920, height: 1080, pixels: [UInt8](repeating: 7, count: 1920 * 1080 * 4))
        #expect(image.scaledDown(toWidth: 1920).pixels.count == image.pixels.count)
        #expect(image.scaledDown(toWidth: 4000).width == 1920)
        let thumbnail = image.scaledDown(toWidth: 640)
        #expect(thumbnail.width == 640 && thumbnail.height == 360)
        #expect(thumbnail.pixels.allSatisfy { $0 == 7 })
        #expect(image.scaledDown(toWidth: 1).height == 1)
    }
}
