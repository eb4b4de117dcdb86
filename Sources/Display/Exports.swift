// `import Display` is all an app needs to play a file in a `PlayerView` (as `import AVFoundation`
// is): the playback API (Playback) and the FFmpeg-backed `Asset(url:)` / `PlayerItem(url:)` (Media)
// come with it.
@_exported import Media
@_exported import Playback
