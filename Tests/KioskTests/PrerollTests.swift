import Foundation
@testable import Kiosk
import Playback
import Testing
import TestSupport

@Suite struct PrerollTests {
    @Test func presentationStartsWhenEverySessionHasItsFirstFrames() {
        let lines = LogLines()
        let (own, region) = (Preroll(), Preroll())
        own.raise()
        region.raise()
        Preroll.wait(for: [own, region], output: "headless-0", logger: Logger(level: .info, sink: lines.append))
        #expect(lines.all.isEmpty)
    }

    /// One without its first frames by the limit (here none): presentation starts anyway, and says so once.
    @Test func aSessionWithoutFirstFramesDelaysNoLongerThanTheLimit() {
        let lines = LogLines()
        let own = Preroll()
        own.raise()
        Preroll.wait(for: [Preroll(), own, Preroll()], output: "headless-0", logger: Logger(level: .info, sink: lines.append), limit: 0)
        #expect(lines.all.filter { $0.contains("no first frames within the preroll limit") && $0.contains("headless-0") }.count == 1)
    }
}
