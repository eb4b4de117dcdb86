import Playback
import Render

/// What an output can do besides drawing pictures, as a value it reports: a caller asks the
/// output for the matching facet (`displayPower`, `pageFlips`, a screenshot source) instead of
/// casting the output to find out.
public struct OutputFeatures: OptionSet, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The picture on screen can be read back (the control socket's `screenshot`).
    public static let screenshot = OutputFeatures(rawValue: 1 << 0)
    /// The display can be put into standby and woken (`DisplayPowerControl`).
    public static let displayPower = OutputFeatures(rawValue: 1 << 1)
    /// Page flips are timed (`PageFlipClock`): the display's measured refresh and jitter.
    public static let pageFlipClock = OutputFeatures(rawValue: 1 << 2)

    public var description: String {
        [(Self.screenshot, "screenshot"), (.displayPower, "display-power"), (.pageFlipClock, "page-flip-clock")]
            .filter { contains($0.0) }.map(\.1).joined(separator: ",")
    }
}

extension HeadlessOutput {
    /// Read back from its GL target, and a simulated standby; no display, so no page flips.
    public var features: OutputFeatures { [.screenshot, .displayPower] }
    public var displayPower: (any DisplayPowerControl)? { self }
    public var pageFlips: PageFlipClock? { nil }
}

extension KMSOutput {
    /// Standby and timed page flips always; a picture read back where the presentation's buffers
    /// can be read (planes' dumb buffers, not GL's GBM buffers).
    public var features: OutputFeatures { readsBack ? [.screenshot, .displayPower, .pageFlipClock] : [.displayPower, .pageFlipClock] }
    public var displayPower: (any DisplayPowerControl)? { self }
    /// The page-flip clock of the display driven now (nil while there is none).
    public var pageFlips: PageFlipClock? { flipClock }
}
