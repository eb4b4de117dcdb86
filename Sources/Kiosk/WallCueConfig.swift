import Foundation
import Inputs
import Playback

/// `wall.sync.cue`: triggers on one node play on every node of the wall on the same vsync. The
/// node pressed picks a wall time `lead` seconds ahead and sends it to the other nodes; every node
/// cuts on its first vsync at or after that time. Needs `wall.sync.mode: clock` (the nodes' clocks
/// agree). Every node runs the same config: each binds its own address and sends to the others'.
///
/// ```json
/// "cue": {"nodes": {"pi-1": "10.0.0.11:7400", "pi-2": "10.0.0.12:7400"}, "lead": 0.1}
/// ```
public struct WallCueSettings: Sendable, Equatable {
    public struct Node: Sendable, Equatable {
        public var name: String
        public var address: UDPEndpoint
        public init(name: String, address: UDPEndpoint) {
            self.name = name
            self.address = address
        }
    }

    /// Each node's cue socket (UDP): where it listens and sends from, and where the others send.
    public var nodes: [Node]
    /// Seconds from the press to the vsync every node cuts on.
    public var lead = WallCueSettings.defaultLead

    public init(nodes: [Node], lead: Double = WallCueSettings.defaultLead) {
        self.nodes = nodes
        self.lead = lead
    }

    /// Where node `node` listens and the others it sends to; nil when the config does not name it.
    public func link(forNode node: String) -> (listen: UDPEndpoint, peers: [UDPEndpoint])? {
        guard let own = nodes.first(where: { $0.name == node }) else { return nil }
        return (own.address, nodes.filter { $0.name != node }.map(\.address))
    }

    /// 0.1 s: six vsyncs at 60 Hz, for a datagram across a LAN (well under a millisecond) and a
    /// presentation loop that asks for its pictures a vsync or two ahead, with room to spare.
    public static let defaultLead = 0.1
    public static let leadRange = 0.02...2.0
    /// Most nodes a cue map lists (each cue is sent to every other).
    public static let mostNodes = 64
}

extension ConfigReader {
    /// `wall.sync.cue`; `wallNodes`: the nodes the wall's outputs name, which it must list.
    mutating func readWallCue(_ value: JSONValue, at path: String, wallNodes: [String]) -> WallCueSettings? {
        guard let fields = members(value, at: path, allowed: ["nodes", "lead"]) else { return nil }
        let before = problems.count
        var nodes: [WallCueSettings.Node] = [], lead = WallCueSettings.defaultLead
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "nodes":
                guard case .object(let map) = v, (2...WallCueSettings.mostNodes).contains(map.count) else {
                    problem(field, "expected an object of 2 to \(WallCueSettings.mostNodes) nodes, each its cue socket's address: {\"pi-1\": \"10.0.0.11:7400\", \"pi-2\": \"10.0.0.12:7400\"}")
                    continue
                }
                for (name, address) in map {
                    let at = "\(field).\(name)"
                    guard let text = string(address, at: at) else { continue }
                    guard let endpoint = UDPEndpoint(parsing: text) else {
                        problem(at, "\"\(Self.clipped(text))\" is not an IPv4 address and port: write e.g. \"10.0.0.11:7400\"")
                        continue
                    }
                    if nodes.contains(where: { $0.name == name }) {
                        problem(at, "given twice")
                        continue
                    }
                    if nodes.contains(where: { $0.address == endpoint }) {
                        problem(at, "\(endpoint) is another node's address too: each node needs its own")
                        continue
                    }
                    if !wallNodes.contains(name) {
                        problem(at, "\"\(Self.clipped(name))\" is not a node of the wall (its outputs name: \(wallNodes.isEmpty ? "none" : wallNodes.joined(separator: ", ")))")
                        continue
                    }
                    nodes.append(.init(name: name, address: endpoint))
                }
            case "lead":
                guard case .number(let n) = v else {
                    problem(field, "expected a number of seconds, found \(v.typeName)")
                    continue
                }
                do { lead = try checkedNumber(n, in: WallCueSettings.leadRange, field: field) } catch { problem(error) }
            default: break
            }
        }
        if !fields.contains(where: { $0.key == "nodes" }) {
            problem("\(path).nodes", "missing: each node's cue socket, e.g. {\"pi-1\": \"10.0.0.11:7400\", \"pi-2\": \"10.0.0.12:7400\"}")
        }
        if problems.count == before, let missing = wallNodes.first(where: { name in !nodes.contains { $0.name == name } }) {
            problem("\(path).nodes", "missing node \"\(missing)\": every node of the wall takes part in its cues")
        }
        guard problems.count == before else { return nil }
        return WallCueSettings(nodes: nodes, lead: lead)
    }
}
