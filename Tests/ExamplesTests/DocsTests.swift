import Foundation
import Testing
import TestSupport

/// The docs against the code: README's commands and config are run, the config tables of
/// docs/config.md and docs/walls.md match the schema, and docs/control.md's tables match what a
/// running marquee and marqueectl say. Each test fails when the docs drift from the code.
@Suite(.serialized) struct DocsTests {
    static func read(_ doc: String) throws -> String {
        try String(contentsOfFile: Command.repository + "/" + doc, encoding: .utf8)
    }

    /// The bodies of the fenced blocks of `language` (```json, ```sh) that start a line.
    static func blocks(_ language: String, in text: String) -> [String] {
        text.components(separatedBy: "\n```\(language)\n").dropFirst().map { $0.components(separatedBy: "\n```").first ?? "" }
    }

    /// The text of section `## title` (up to the next `## `).
    static func section(_ title: String, in text: String) -> String {
        let parts = text.components(separatedBy: "\n## \(title)\n")
        guard parts.count > 1 else { return "" }
        return parts[1].components(separatedBy: "\n## ").first ?? ""
    }

    /// The Markdown tables in `text`: their header cells and rows of cells.
    static func tables(in text: String) -> [(header: [String], rows: [[String]])] {
        func cells(_ line: Substring) -> [String] {
            line.trimmingCharacters(in: .whitespaces).dropFirst().dropLast().split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
        var tables: [(header: [String], rows: [[String]])] = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var i = 0
        while i + 1 < lines.count {
            if lines[i].hasPrefix("|"), lines[i + 1].hasPrefix("|---") {
                var rows: [[String]] = []
                var j = i + 2
                while j < lines.count, lines[j].hasPrefix("|") { rows.append(cells(lines[j])); j += 1 }
                tables.append((cells(lines[i]), rows))
                i = j
            } else {
                i += 1
            }
        }
        return tables
    }

    /// The `code` spans of a cell.
    static func codeSpans(_ cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    static var marquee: String { ExamplesTests.binFolder.appendingPathComponent("marquee").path }
    static var marqueectl: String { ExamplesTests.binFolder.appendingPathComponent("marqueectl").path }

    // MARK: README

    /// The issue's bounds: a newcomer's page, and an architecture page that can be read in one go.
    @Test func readmeAndArchitectureStayShort() throws {
        let readme = try Self.read("README.md").split(separator: "\n", omittingEmptySubsequences: false).count
        let architecture = try Self.read("docs/ARCHITECTURE.md").split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(readme <= 200, "README.md has \(readme) lines")
        #expect(architecture <= 250, "docs/ARCHITECTURE.md has \(architecture) lines")
    }

    /// Every doc README links to exists.
    @Test func readmeLinksExist() throws {
        let readme = try Self.read("README.md")
        let links = readme.components(separatedBy: "](").dropFirst().compactMap { $0.split(separator: ")").first.map(String.init) }
        #expect(links.count >= 6)
        for link in links where !link.contains("://") {
            #expect(FileManager.default.fileExists(atPath: Command.repository + "/" + link), "README links to \(link), which is not there")
        }
    }

    /// Where README says to save its first config (`Save this as `PATH``), and that config's text.
    static func firstConfig() throws -> (path: String, text: String) {
        let readme = try read("README.md")
        let said = try #require(readme.components(separatedBy: "Save this as `").dropFirst().first?.split(separator: "`").first,
                                "README says where to save its first config")
        let text = try #require(blocks("json", in: readme).first, "README has a config")
        return (String(said), text)
    }

    /// README's config written into a folder of its own as README says to save it, with every file
    /// it names next to it: `demo/demo.mp4` is the repository's demo clip, others a test clip.
    static func placeFirstConfig() throws -> String {
        let (path, text) = try firstConfig()
        let folder = TestMedia.folder + "/readme-first/" + (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let config = folder + "/" + (path as NSString).lastPathComponent
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let items = object["playlist"] as? [[String: Any]] ?? []
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        for uri in items.compactMap({ $0["uri"] as? String }) where !uri.hasPrefix("/") {
            let target = folder + "/" + uri
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let source = FileManager.default.fileExists(atPath: Command.repository + "/configs/" + uri) ? Command.repository + "/configs/" + uri : clip
            try FileManager.default.copyItem(atPath: source, toPath: target)
        }
        return config
    }

    /// Each README config, with the files it names, is valid for `marquee --check-config` and
    /// every file in it plays. (SchemaTests checks every doc's configs against the schema too.)
    @Test func readmeConfigIsValidAndEveryFileInItPlays() throws {
        let configs = Self.blocks("json", in: try Self.read("README.md"))
        #expect(configs.count == 1, "README has one config; a new one needs a line here")
        let config = try Self.placeFirstConfig()
        let checked = try Command.run(Self.marquee, ["--config", config, "--check-config"])
        #expect(checked.status == 0, "\(checked.text)\(checked.errorText)")
        #expect(checked.text.contains(": valid (") && !(checked.text + checked.errorText).contains("cannot be played"),
                "\(checked.text)\(checked.errorText)")
    }

    /// Splits a shell line into words: double quotes group, nothing else is special here.
    static func words(_ line: String) -> [String] {
        var words: [String] = [], word = "", quoted = false, started = false
        for c in line {
            if c == "\"" { quoted.toggle(); started = true } else if c == " " && !quoted {
                if started { words.append(word) }
                word = ""; started = false
            } else { word.append(c); started = true }
        }
        if started { words.append(word) }
        return words
    }

    /// What a command's marquee arguments become here: the debug marquee (built next to this
    /// test; make builds the release one), README's config path mapped to the placed copy, and a
    /// run that ends by itself on the headless output (CI has no display) with no socket.
    func runMarquee(_ arguments: [String], config: String) throws -> CommandResult {
        let (saidPath, _) = try Self.firstConfig()
        let mapped = arguments.map { $0 == saidPath ? config : $0 }
        var arguments = mapped
        if !arguments.contains("--check-config") {
            arguments += ["--output", "headless", "--clock", "virtual", "--exit-after", "1", "--socket", "none"]
        }
        return try Command.run(Self.marquee, arguments, directory: Command.repository)
    }

    /// `make -n TARGET ARGS...`: the commands make would run, none run (no directory lines, which a
    /// make that runs this test, as `make test` does, would otherwise add).
    func dryRun(_ arguments: [String]) throws -> [String] {
        let result = try Command.run("make", ["-n", "--no-print-directory"] + arguments, directory: Command.repository)
        #expect(result.status == 0, "make -n \(arguments): \(result.errorText)")
        return result.text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Every command in README's ```sh blocks is run here, or, where it is `make test` itself, its
    /// target is checked. A command of a form this test does not know fails it: add it here.
    @Test func everyReadmeCommandRuns() throws {
        let readme = try Self.read("README.md")
        let commands = Self.blocks("sh", in: readme).flatMap { $0.split(separator: "\n") }
            .map { $0.components(separatedBy: " #").first!.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        #expect(commands.contains("make run") && commands.contains("make test"), "README's two commands: \(commands)")
        let config = try Self.placeFirstConfig()
        for command in commands {
            let words = Self.words(command)
            switch (words.first, words.dropFirst().first) {
            case ("make", "run"):
                // make builds in release mode and runs .build/release/marquee with ARGS: check that
                // recipe, then run the same arguments on the debug build.
                let args = words.dropFirst(2).first { $0.hasPrefix("ARGS=") }.map { String($0.dropFirst(5)) } ?? ""
                let recipe = try dryRun(Array(words.dropFirst()))
                #expect(recipe.contains { $0.hasPrefix("swift build -c release") }, "\(command): \(recipe)")
                #expect(recipe.last == ".build/release/marquee \(args)".trimmingCharacters(in: .whitespaces), "\(command): \(recipe)")
                let run = try runMarquee(Self.words(args), config: config)
                #expect(run.status == 0, "\(command): \(run.errorText)")
                #expect(run.errorText.contains("output chosen") && run.errorText.contains("why="), "\(command): \(run.errorText)")
            case ("make", "test"):
                // The whole suite, which includes this test: not run from inside it. Its target
                // builds and runs every test and the short fuzz run, and CI runs it.
                let recipe = try dryRun(["test"])
                for step in ["swift build --build-tests", "swift test --skip-build", "fuzz"] {
                    #expect(recipe.contains { $0.contains(step) }, "make test: no \(step) in \(recipe)")
                }
                let ci = try Self.read(".ci/run")
                #expect(ci.split(separator: "\n").contains("make test"), ".ci/run runs make test")
            case ("make", "check"):
                // The unit tests only; the whole suite (which runs them too) includes this test.
                let recipe = try dryRun(["check"])
                #expect(recipe.contains { $0.contains("swift test --skip-build --filter") && $0.contains("PlaybackTests") },
                        "make check runs the unit test targets: \(recipe)")
            case (".build/release/marquee", _):
                let run = try runMarquee(Array(words.dropFirst()), config: config)
                #expect(run.status == 0, "\(command): \(run.text)\(run.errorText)")
            default:
                Issue.record("README command \(command) is not run by DocsTests: add it to everyReadmeCommandRuns")
            }
        }
    }

    // MARK: Config reference

    /// Each property the schema defines: the paths that reach it (`display.mode`,
    /// `playlist[].uri`, `schedule[].playlist[].uri`...) and its default.
    struct SchemaKey {
        var paths: Set<String> = []
        var defaultValue: Any?
    }

    static func schemaKeys() throws -> (byPointer: [String: SchemaKey], pointersByPath: [String: Set<String>]) {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Command.repository + "/configs/marquee.schema.json"))) as? [String: Any])
        var byPointer: [String: SchemaKey] = [:]
        var pointersByPath: [String: Set<String>] = [:]
        func resolve(_ ref: String) -> Any? {
            var node: Any? = root
            for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] }
            return node
        }
        func walk(_ node: Any, _ pointer: String, _ path: String, _ refs: Set<String>) {
            guard let node = node as? [String: Any] else { return }
            if let ref = node["$ref"] as? String, !refs.contains(ref), let target = resolve(ref) {
                walk(target, ref, path, refs.union([ref]))
            }
            for combinator in ["oneOf", "anyOf", "allOf"] {
                for (i, sub) in (node[combinator] as? [Any] ?? []).enumerated() { walk(sub, "\(pointer)/\(combinator)/\(i)", path, refs) }
            }
            for (key, value) in node["properties"] as? [String: Any] ?? [:] {
                let keyPath = path.isEmpty ? key : path + "." + key
                let keyPointer = "\(pointer)/properties/\(key)"
                byPointer[keyPointer, default: SchemaKey()].paths.insert(keyPath)
                if let d = (value as? [String: Any])?["default"] { byPointer[keyPointer]?.defaultValue = d }
                pointersByPath[keyPath, default: []].insert(keyPointer)
                walk(value, keyPointer, keyPath, refs)
            }
            if let items = node["items"] as? [String: Any] { walk(items, pointer + "/items", path + "[]", refs) }
        }
        walk(root, "#", "", [])
        return (byPointer, pointersByPath)
    }

    /// `a.b[].c` and its ancestors `a`, `a.b`, `a.b[]`... as schema paths: `a`, `a.b`, `a.b[].c`.
    static func ancestors(_ path: String) -> [String] {
        var result: [String] = []
        var current = ""
        for part in path.split(separator: ".") {
            let name = part.hasSuffix("[]") ? String(part.dropLast(2)) : String(part)
            current = current.isEmpty ? name : current + "." + name
            result.append(current)
            if part.hasSuffix("[]") { current += "[]" }
        }
        return result
    }

    /// The config keys of docs/config.md and docs/walls.md are the schema's: every key the tables
    /// name exists there, every property the schema defines is in a table (itself, or through a
    /// key inside it), and a default the schema states is the one the table gives.
    @Test func configTablesMatchTheSchema() throws {
        let (byPointer, pointersByPath) = try Self.schemaKeys()
        #expect(byPointer.count > 80, "schema properties found: \(byPointer.count)")
        var documented: [String: String] = [:]  // key -> its default cell
        for doc in ["docs/config.md", "docs/walls.md"] {
            for table in Self.tables(in: try Self.read(doc)) where table.header.first == "key" {
                let defaultColumn = table.header.firstIndex(of: "default")
                for row in table.rows {
                    for key in Self.codeSpans(row[0]) {
                        #expect(documented[key] == nil, "\(doc): \(key) is in two rows")
                        documented[key] = defaultColumn.map { row.indices.contains($0) ? row[$0] : "" } ?? ""
                    }
                }
            }
        }
        #expect(documented.count > 60, "keys documented: \(documented.count)")
        var covered: Set<String> = []
        for (key, defaultCell) in documented {
            let pointers = pointersByPath[key] ?? []
            #expect(!pointers.isEmpty, "\(key) is documented but the schema has no such key")
            for ancestor in Self.ancestors(key) { covered.formUnion(pointersByPath[ancestor] ?? []) }
            for pointer in pointers {
                guard let value = byPointer[pointer]?.defaultValue else { continue }
                let shown = value as? String ?? ((value as? NSNumber).map { n in
                    String(cString: n.objCType) == "c" ? (n.boolValue ? "true" : "false") : "\(n)" } ?? "\(value)")
                #expect(defaultCell.contains("`\(shown)`"), "\(key): the schema's default is \(shown); the table says \(defaultCell)")
            }
        }
        let missing = byPointer.filter { !covered.contains($0.key) }.map { $0.value.paths.sorted().first ?? $0.key }.sorted()
        #expect(missing.isEmpty, "schema keys no table documents: \(missing)")
    }

    // MARK: Control reference

    /// A marquee on the demo loop (headless, virtual clock) with its control socket.
    final class Running {
        let process = Process()
        let socket: String

        init() throws {
            let folder = TestMedia.folder + "/docs-control"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            socket = folder + "/marquee.sock"
            try? FileManager.default.removeItem(atPath: socket)
            process.executableURL = URL(fileURLWithPath: DocsTests.marquee)
            process.arguments = ["--output", "headless", "--clock", "virtual", "--exit-after", "600", "--socket", socket]
            process.currentDirectoryURL = URL(fileURLWithPath: Command.repository)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// `marqueectl --socket SOCKET ARGS`, retried while marquee is not reachable yet (exit 3).
        func ctl(_ arguments: [String]) throws -> CommandResult {
            let deadline = Date(timeIntervalSinceNow: 30)
            while true {
                let result = try Command.run(DocsTests.marqueectl, ["--socket", socket] + arguments)
                if result.status != 3 || Date() > deadline || process.end != nil { return result }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }

        deinit {
            if process.end == nil { process.terminate() }
            _ = process.waitForEnd(timeout: 10)
        }
    }

    /// The first code span of each row of the tables in `section` of docs/control.md.
    static func controlTableNames(_ section: String) throws -> [String] {
        tables(in: self.section(section, in: try read("docs/control.md"))).flatMap { $0.rows }.flatMap { codeSpans($0[0]) }
    }

    /// docs/control.md's property table is `property-list`, and its command table is
    /// `command-list`, as a running marquee gives them.
    @Test func controlTablesMatchPropertyListAndCommandList() throws {
        let running = try Running()
        let properties = try running.ctl(["get", "property-list"])
        #expect(properties.status == 0, "\(properties.errorText)")
        let names = try #require(try JSONSerialization.jsonObject(with: properties.output) as? [String], "\(properties.text)")
        let documented = try Self.controlTableNames("Properties")
        #expect(Set(documented).count == documented.count, "a property in two rows: \(documented)")
        #expect(Set(documented) == Set(names), "documented, not in property-list: \(Set(documented).subtracting(names).sorted()); in property-list, not documented: \(Set(names).subtracting(documented).sorted())")

        let commands = try running.ctl(["get", "command-list"])
        #expect(commands.status == 0, "\(commands.errorText)")
        let list = try #require(try JSONSerialization.jsonObject(with: commands.output) as? [[String: Any]], "\(commands.text)")
        let commandNames = Set(list.compactMap { $0["name"] as? String })
        let documentedCommands = Set(try Self.controlTableNames("Commands"))
        #expect(!commandNames.isEmpty && documentedCommands == commandNames,
                "documented, not in command-list: \(documentedCommands.subtracting(commandNames).sorted()); in command-list, not documented: \(commandNames.subtracting(documentedCommands).sorted())")
    }

    /// docs/control.md's marqueectl table lists the commands `marqueectl --help` lists.
    @Test func marqueectlTableMatchesItsHelp() throws {
        let help = try Command.run(Self.marqueectl, ["--help"])
        #expect(help.status == 0)
        let lines = help.text.components(separatedBy: "Commands:\n").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""
        var commands: Set<String> = []
        for line in lines.split(separator: "\n") where line.hasPrefix("  ") && !line.hasPrefix("   ") {
            let synopsis = line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ").first ?? ""
            for alternative in synopsis.components(separatedBy: " | ") { commands.insert(String(alternative.split(separator: " ").first ?? "")) }
        }
        #expect(commands.count > 10, "\(help.text)")
        let documented = try Self.controlTableNames("marqueectl")
        let firstWords = Set(Self.tables(in: Self.section("marqueectl", in: try Self.read("docs/control.md")))
            .flatMap { $0.rows }.compactMap { Self.codeSpans($0[0]).first })
        #expect(!documented.isEmpty && firstWords == commands,
                "documented, not in --help: \(firstWords.subtracting(commands).sorted()); in --help, not documented: \(commands.subtracting(firstWords).sorted())")
    }
}
