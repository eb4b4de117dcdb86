import Foundation
import Network
import Playback
import Render
import SystemCalls

/// The file extensions a playlist folder is scanned for.
public let mediaFileExtensions: Set<String> = ["mp4", "m4v", "mov", "mkv", "webm", "avi", "ts", "mpg", "mpeg", "png", "jpg", "jpeg"]

/// How long a still image shows when its item does not say.
public let defaultStillDuration = 10.0

extension ConfigReader {
    mutating func bool(_ value: JSONValue, at path: String) -> Bool? {
        guard case .bool(let b) = value else {
            problem(path, "expected true or false, found \(value.typeName)")
            return nil
        }
        return b
    }

    /// A number of seconds, from `minimum` to `longestTimeInSeconds`.
    mutating func seconds(_ value: JSONValue, at path: String, minimum: Double = 0) -> Double? {
        guard case .number(let n) = value else {
            problem(path, "expected a number of seconds, found \(value.typeName)")
            return nil
        }
        guard n >= 0 else {
            problem(path, "\(n) is negative: times are seconds from the start of the item")
            return nil
        }
        do {
            return try checkedNumber(n, in: minimum...longestTimeInSeconds, field: path)
        } catch {
            problem(error)
            return nil
        }
    }

    /// A playlist at `path`: an array of items, `{"directory": "media/"}` or `{"m3u": "list.m3u"}`.
    /// Returns its items and where they come from (nil, with the problems noted, when it cannot be
    /// read at all). `emptyHint` says what to do about an empty array.
    mutating func readPlaylist(_ value: JSONValue, at path: String, emptyHint: String,
                               baseDirectory: String, defersListFile: Bool = false, allowsRemote: Bool = false) -> (items: [KioskConfig.Item], origin: KioskConfig.PlaylistOrigin)? {
        switch value {
        case .array(let items):
            if items.isEmpty { problem(path, "empty: \(emptyHint)") }
            return (items.enumerated().compactMap { readItem($0.element, at: "\(path)[\($0.offset)]", baseDirectory: baseDirectory) }, .list)
        case .object:
            guard let fields = members(value, at: path, allowed: ["directory", "m3u"]) else { return nil }
            guard fields.count == 1, let (key, v) = fields.first else {
                problem(path, "give either \"directory\" or \"m3u\"")
                return nil
            }
            guard let s = string(v, at: "\(path).\(key)") else { return nil }
            if key == "m3u", NetworkURL.hasNetworkScheme(s) { return remotePlaylist(s, at: "\(path).m3u", allowed: allowsRemote) }
            let file = KioskConfig.join(baseDirectory, s)
            let origin: KioskConfig.PlaylistOrigin = key == "directory" ? .directory(file) : .m3u(file)
            // A long list is read once the player runs (its problems are warnings then, as here);
            // a short one now, so that it plays from the start as before (a wall's clock sync too).
            if defersListFile, case .m3u = origin, regularFileSize(file) > readAtStartM3USize { return ([], origin) }
            do {
                return (try expandPlaylist(origin), origin)
            } catch {
                // The folder or list is content, read again at every pass (a stick mounted late, a
                // list still being written): the config as written is valid, the player starts.
                warning("\(path).\(key)", error.message)
                return ([], origin)
            }
        default:
            problem(path, "expected an array of items, or {\"directory\": ...} or {\"m3u\": ...}, found \(value.typeName)")
            return nil
        }
    }

    mutating func readItem(_ item: JSONValue, at path: String, baseDirectory: String) -> KioskConfig.Item? {
        guard let fields = members(item, at: path, allowed: ["uri", "start", "end", "gravity", "duration", "volume", "transition", "live"]) else { return nil }
        guard let uriValue = item["uri"] else {
            problem("\(path).uri", "missing: the file to play")
            return nil
        }
        var ok = true
        var parsed = KioskConfig.Item(uri: "", path: "")
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "start": parsed.start = seconds(v, at: field); ok = ok && parsed.start != nil
            case "end": parsed.end = seconds(v, at: field); ok = ok && parsed.end != nil
            case "duration":
                if case .number(0) = v {
                    problem(field, "0: a still must show for some time")
                } else {
                    // At least a millisecond: a still of no time would loop without showing anything.
                    parsed.duration = seconds(v, at: field, minimum: 0.001)
                }
                ok = ok && parsed.duration != nil
            case "gravity":
                parsed.gravity = choice(v, at: field)
                ok = ok && parsed.gravity != nil
            case "volume":
                parsed.volume = itemVolume(v, at: field)
                ok = ok && parsed.volume != nil
            case "transition":
                parsed.transition = transition(v, at: field)
                ok = ok && parsed.transition != nil
            case "live":
                if case .string(let uri) = uriValue {
                    parsed.live = liveOptions(v, at: field, uri: uri)
                    ok = ok && parsed.live != nil
                }
            default: break
            }
        }
        if let start = parsed.start, let end = parsed.end, end <= start {
            problem("\(path).end", "\(end) is not after start (\(start))")
            ok = false
        }
        guard let uri = string(uriValue, at: "\(path).uri") else { return nil }
        parsed.uri = uri
        if NetworkURL.hasNetworkScheme(uri) {
            parsed.path = uri  // a network source: checked against network.allow (NetworkConfig.swift)
            return ok ? parsed : nil
        }
        guard let resolved = Self.filePath(of: uri) else {
            problem("\(path).uri", "\"\(Self.clipped(uri))\" is not a file path, a file:// URL or a network URL")
            return nil
        }
        parsed.path = KioskConfig.join(baseDirectory, resolved)
        return ok ? parsed : nil
    }
}

public struct PlaylistError: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { description }
    public let message: String
    /// The error it was made from (a folder that cannot be read, a `RegularFileError`), if any.
    public let cause: (any Error)?
    public var description: String { message }

    init(message: String, cause: (any Error)? = nil) {
        self.message = message
        self.cause = cause
    }
}

/// An entry of a playlist folder that is not played because it is not a regular file (a FIFO, a
/// socket, a device, a directory, a dangling link): its name and what it is.
public struct SkippedEntry: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let kind: String
    public var description: String { "\(name) (\(kind))" }
}

/// What `path` is when it is not a regular file (links followed); nil for a regular file.
func nonRegularKind(_ path: String) -> String? {
    var info = stat()
    guard stat(path, &info) == 0 else { return "cannot stat: \(String(cString: strerror(errno)))" }
    return RegularFile.kind(of: info.st_mode)
}

/// The largest M3U file read (128 MB: a million entries of about a hundred characters).
public let largestM3UFile = 128 << 20

/// An M3U file larger than this (some 10,000 lines) is read after the start, when the config
/// allows it (`KioskConfig.load(path:defersListFile:)`).
let readAtStartM3USize = 256 << 10

/// The size of the regular file at `path` (0 for anything else, read at once as before: its
/// error is then reported as always). `stat` does not open the file, so a FIFO cannot block it.
func regularFileSize(_ path: String) -> Int {
    var info = stat()
    guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return 0 }
    return Int(info.st_size)
}

/// The items of a folder or M3U playlist as they are now. A folder gives its media files in name
/// order; an M3U file its entries (comments and `#EXT` lines skipped), relative to the file's folder.
public func expandPlaylist(_ origin: KioskConfig.PlaylistOrigin) throws(PlaylistError) -> [KioskConfig.Item] {
    var skipped: [SkippedEntry] = []
    return try expandPlaylist(origin, skipped: &skipped)
}

/// `expandPlaylist(_:)`, saying in `skipped` which entries of a folder were left out because they
/// are not regular files: only regular files (or links to them) are opened from a folder.
public func expandPlaylist(_ origin: KioskConfig.PlaylistOrigin, skipped: inout [SkippedEntry]) throws(PlaylistError) -> [KioskConfig.Item] {
    try expandPlaylist(origin, skipped: &skipped, first: .max)
}

/// `expandPlaylist(_:skipped:)`, stopping after the first `first` entries of an M3U file (a long
/// list's head plays while the rest is read).
func expandPlaylist(_ origin: KioskConfig.PlaylistOrigin, skipped: inout [SkippedEntry], first limit: Int) throws(PlaylistError) -> [KioskConfig.Item] {
    skipped = []
    switch origin {
    case .list:
        return []
    case .remoteM3U(let url):
        throw PlaylistError(message: "the remote M3U \(url) is read through network.cache, not as a file")
    case .directory(let folder):
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw PlaylistError(message: "cannot read the folder \(folder): \(posixReason(error))", cause: error)
        }
        var media = names.filter { mediaFileExtensions.contains(($0 as NSString).pathExtension.lowercased()) && !$0.hasPrefix(".") }
            .sorted { $0.localizedStandardCompare($1) == .orderedAscending }
        var left: [SkippedEntry] = []
        media.removeAll { name in
            guard let kind = nonRegularKind(KioskConfig.join(folder, name)) else { return false }
            left.append(SkippedEntry(name: name, kind: kind))
            return true
        }
        skipped = left
        if media.isEmpty {
            let also = left.isEmpty ? "" : "; not regular files: \(left.map(\.description).joined(separator: ", "))"
            throw PlaylistError(message: "the folder \(folder) has no media files (\(mediaFileExtensions.sorted().joined(separator: ", ")))\(also)")
        }
        return media.map { KioskConfig.Item(uri: $0, path: KioskConfig.join(folder, $0)) }
    case .m3u(let file):
        // Opened as a playlist item is: a regular file only (a FIFO would hang the reader), bounded.
        let data: [UInt8]
        do {
            data = try RegularFile.read(file, limit: largestM3UFile)
        } catch {
            throw PlaylistError(message: "the M3U file \(file) \(error.reason)", cause: error)
        }
        let folder = (file as NSString).deletingLastPathComponent
        // A head is read from the file's first lines only (twice as many as it wants, for
        // comments), cut after a line feed: no need to split a million lines for a thousand.
        var end = data.endIndex
        if limit < Int.max / 2 {
            var lines = 0
            if let cut = data.firstIndex(where: { byte in
                if byte == UInt8(ascii: "\n") { lines += 1 }
                return lines >= 2 * limit + 64
            }) { end = cut + 1 }
        }
        // Entries made straight from the lines (no lists of trimmed or kept lines between).
        var items: [KioskConfig.Item] = []
        for line in String(decoding: data[..<end], as: UTF8.self).split(whereSeparator: \.isNewline) {
            let entry = line.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty || entry.hasPrefix("#") { continue }
            guard let resolved = ConfigReader.filePath(of: entry) else {
                throw PlaylistError(message: "\(file): \"\(entry)\" is not a file path or a file:// URL")
            }
            let path = KioskConfig.join(folder, resolved)
            // The same text once in memory when the entry is the path itself.
            items.append(KioskConfig.Item(uri: entry, path: path == entry ? entry : path))
            if items.count >= limit { break }
        }
        if items.isEmpty { throw PlaylistError(message: "the M3U file \(file) lists no entries") }
        return items
    }
}

private func posixReason(_ error: any Error) -> String {
    let ns = error as NSError
    if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return String(cString: strerror(Int32(clamping: underlying.code)))
    }
    if ns.domain == NSCocoaErrorDomain && ns.code == NSFileReadNoSuchFileError { return String(cString: strerror(ENOENT)) }
    return ns.localizedDescription
}
