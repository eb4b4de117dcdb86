import Foundation
import Kiosk
import Playback

/// The control protocol on any bytes, one client's conversation: each line (as the socket splits
/// them) gets its reply from the kiosk's own handler (`KioskController`, over a status like a
/// playing session's, with a player that does every command at once), and after each line the
/// client's observed properties are read and reported. Every reply is one line holding one JSON
/// object with an `error` member.
public func fuzzControl(_ bytes: [UInt8]) {
    let session = ControlSession(clientID: 1, handler: controller, maxObserved: 8)
    for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
        // The server's look-ahead (issue 26): a line it may answer without running gets a reply
        // that is one JSON object (JSON form) or none (text form).
        if let setting = ControlSession.supersedingKey(Array(line)) {
            let reply = ControlSession.supersededReply(requestID: setting.requestID, command: setting.command)
            guard reply.isEmpty == (setting.requestID == nil),
                  reply.isEmpty || (try? JSONParser.parse(String(decoding: reply.dropLast(), as: UTF8.self)))?["error"]?.stringValue == "success" else {
                fatalError("superseded reply \(String(decoding: reply, as: UTF8.self)) to \(String(decoding: line, as: UTF8.self))")
            }
        }
        if let reply = session.reply(to: Array(line)) {
            guard reply.last == 0x0A, !reply.dropLast().contains(0x0A),
                  let value = try? JSONParser.parse(String(decoding: reply.dropLast(), as: UTF8.self)),
                  value["error"]?.stringValue != nil else {
                fatalError("reply \(String(decoding: reply, as: UTF8.self)) to \(String(decoding: line, as: UTF8.self)) is not one JSON object with an error")
            }
        }
        var values: [String: JSONValue?] = [:]
        for name in session.observedNames { values.updateValue(try? controller.property(name), forKey: name) }
        for event in session.propertyChanges(values) { _ = event.encoded }
    }
}

private let controller: KioskController = {
    let status = KioskStatus()
    status.update { s in
        s.items = [.init(uri: "a.mp4", path: "/media/a.mp4", state: .played, error: nil),
                   .init(uri: "b.png", path: "/media/b.png", state: .failed, error: "cannot open"),
                   .init(uri: "c.mp4", path: "/media/c.mp4", state: .playing, error: nil)]
        s.position = 2
        s.currentPath = "/media/c.mp4"
        s.timePos = 1.5
        s.duration = 10
        var output = KioskStatus.Output(name: "HDMI-A-1", mode: "1920x1080@60", videoRect: [0, 0, 1920, 1080], connected: true)
        output.syncErrorMs = 0.4
        s.outputs = [output]
        s.displayFPS = 60
        s.wallSync = "clock"
        s.conversions = ["/media/c.mp4": "yuv444p -> nv12"]
    }
    // The player: commands succeed at once, except a screenshot of an output that does not exist.
    return KioskController(status: status, commandTimeout: 5) { command in
        switch command {
        case .screenshot(let output?, _) where output != "HDMI-A-1": return .failed("no output \(output)")
        case .screenshot: return .screenshot(png: Data([0x89, 0x50, 0x4E, 0x47]), width: 1, height: 1, output: "HDMI-A-1")
        default: return .done
        }
    }
}()
