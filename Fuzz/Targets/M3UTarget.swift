import Foundation
import Kiosk

/// The M3U reader (`{"m3u": ...}` playlists) on a file holding any bytes: it lists entries or throws.
public func fuzzM3U(_ bytes: [UInt8]) {
    let file = m3uFolder + "/list.m3u"
    // Overwritten in place (FileManager's createFile writes a new file and renames it).
    guard let stream = fopen(file, "w") else { fatalError("cannot write \(file)") }
    guard fwrite(bytes, 1, bytes.count, stream) == bytes.count, fclose(stream) == 0 else { fatalError("cannot write \(file)") }
    guard let items = try? expandPlaylist(.m3u(file)) else { return }
    for item in items where item.uri.isEmpty || item.path.isEmpty {
        fatalError("an M3U entry with an empty uri or path: \(item)")
    }
}

private let m3uFolder = scratchFolder("m3u")
