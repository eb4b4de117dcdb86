import Playback

/// Which KMS API drives the display; chosen once, at start-up.
public enum KMSAPI: String, Sendable, CaseIterable {
    /// Atomic modesetting (falls back to legacy where the driver has no atomic support).
    case atomic
    /// `drmModeSetCrtc` + `drmModePageFlip`.
    case legacy
}

/// The mode asked for: `preferred` (the connector's preferred mode), `highest` (most pixels, then the
/// highest refresh), `WxH` (that size, highest refresh) or `WxH@Hz` (that size and refresh).
public enum KMSModeRequest: Sendable, Hashable, CustomStringConvertible {
    case preferred
    case highest
    case size(width: Int, height: Int, refresh: RefreshRate?)

    public init?(parsing text: String) {
        switch text {
        case "preferred": self = .preferred
        case "highest": self = .highest
        default:
            guard let mode = DisplayMode(parsing: text) else { return nil }
            self = .size(width: mode.width, height: mode.height, refresh: text.contains("@") ? mode.refresh : nil)
        }
    }

    public var description: String {
        switch self {
        case .preferred: "preferred"
        case .highest: "highest"
        case .size(let w, let h, nil): "\(w)x\(h)"
        case .size(let w, let h, let r?): "\(w)x\(h)@\(r)"
        }
    }
}

/// A mode a connector offers, in Swift terms (from `drmModeModeInfo`).
public struct KMSMode: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    /// Exact refresh: pixel clock / (htotal * vtotal).
    public var refresh: RefreshRate
    public var preferred: Bool
    /// Position in the connector's list (where the kernel's raw mode is kept).
    public var index: Int

    public init(width: Int, height: Int, refresh: RefreshRate, preferred: Bool, index: Int) {
        self.width = width
        self.height = height
        self.refresh = refresh
        self.preferred = preferred
        self.index = index
    }

    public var displayMode: DisplayMode { DisplayMode(width: width, height: height, refresh: refresh) }
    public var description: String { displayMode.description + (preferred ? " (preferred)" : "") }
}

/// Picks the mode for `request` among `modes`; nil when none fits. A refresh matches within 0.01 Hz
/// (59.94 asks for 60000/1001, which EDIDs round differently).
public func chooseMode(_ request: KMSModeRequest, from modes: [KMSMode]) -> KMSMode? {
    func better(_ a: KMSMode, _ b: KMSMode) -> Bool {
        (a.width * a.height, a.refresh.hertz) > (b.width * b.height, b.refresh.hertz)
    }
    switch request {
    case .preferred:
        return modes.first { $0.preferred } ?? modes.first
    case .highest:
        return modes.min(by: better)
    case .size(let w, let h, let refresh):
        let sized = modes.filter { $0.width == w && $0.height == h }
        if let refresh {
            return sized.filter { abs($0.refresh.hertz - refresh.hertz) < 0.01 }.first
        }
        return sized.min(by: better)
    }
}

/// Where and how the KMS output runs: from the config's `display` section.
public struct KMSSettings: Sendable {
    /// A `/dev/dri/card*` path; nil: the first card with a connected connector.
    public var device: String?
    /// A connector name (`HDMI-A-1`, `Virtual-1`); nil: the first connected one.
    public var connector: String?
    public var mode: KMSModeRequest = .preferred
    public var api: KMSAPI = .atomic
    /// The scan-out format asked for; XRGB8888 (with a warning) where the device lacks it.
    public var format: KMSPixelFormat = .xrgb8888
    public init(device: String? = nil, connector: String? = nil, mode: KMSModeRequest = .preferred, api: KMSAPI = .atomic,
                format: KMSPixelFormat = .xrgb8888) {
        self.device = device
        self.connector = connector
        self.mode = mode
        self.api = api
        self.format = format
    }
}
