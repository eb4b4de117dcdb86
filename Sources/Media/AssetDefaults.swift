import Foundation
import Playback

extension Asset {
    /// An asset of the file at `url`, read and decoded by FFmpeg (`FFmpegBackend()`: software
    /// decoding), as AVFoundation's `AVURLAsset(url:)` needs no backend. `Asset(url:backend:)`
    /// stays for another backend (tests give scripted ones).
    public convenience init(url: URL) {
        self.init(url: url, backend: FFmpegBackend())
    }
}

extension PlayerItem {
    /// An item of the file at `url`, decoded by FFmpeg (`AVPlayerItem(url:)`).
    public convenience init(url: URL) {
        self.init(asset: Asset(url: url))
    }
}
