import Foundation
import Store
import Testing

/// Kills `StoreCrashWriter` (4 writers appending to their own scopes) with SIGKILL mid-run, twice on the
/// same file, and checks that every version it printed as acknowledged is there, whole, with no gaps.
@Suite struct CrashSafetyTests {
    static let writers = 4

    @Test func everyAcknowledgedAppendSurvivesSIGKILL() async throws {
        let executable = try #require(
            Self.crashWriterPath(), "StoreCrashWriter is not built next to the tests: run `swift build --build-tests`")
        try await withTemporaryDirectory { directory in
            let path = directory + "/crash.sqlite"
            var acknowledged: [String: Int64] = [:]
            for round in 1...2 {
                let printed = try Self.runAndKill(executable: executable, path: path, afterLines: 500 * round)
                for (scope, version) in printed { acknowledged[scope] = max(acknowledged[scope] ?? 0, version) }
                #expect(acknowledged.count == Self.writers)

                let store = try SQLiteStore(path: path)
                defer { store.close() }
                var recovered: [String: RecoveredScope] = [:]
                try store.recover { recovered[$0.info.name] = $0 }
                for (scope, version) in acknowledged {
                    let info = try #require(recovered[scope]?.info)
                    #expect(info.version >= version, "round \(round): \(scope) lost acknowledged versions")
                    let page = try store.changes(scope: scope, after: 0, limit: Int(info.version) + 1)
                    #expect(page.records.map(\.version) == Array(1...info.version))
                    let torn = page.records.filter { $0.payload != Self.payload(scope: scope, version: $0.version) }
                    #expect(torn.isEmpty, "round \(round): \(scope) has partial records \(torn.map(\.version))")
                }
            }
        }
    }

    /// Starts the writer, waits for `afterLines` acknowledged lines (at most 120 s), kills it with SIGKILL
    /// and returns the highest version printed per scope.
    static func runAndKill(executable: String, path: String, afterLines: Int) throws -> [String: Int64] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [path, "\(writers)"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(120)
        while text.split(separator: "\n").count < afterLines, Date() < deadline, process.isRunning {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        text += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .uncaughtSignal, "the writer ended by itself: \(stderr)")
        var highest: [String: Int64] = [:]
        // The last line may be cut by the kill; only whole lines count.
        var lines = text.split(separator: "\n")
        if !text.hasSuffix("\n") { lines.removeLast() }
        for line in lines {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let version = Int64(parts[1]) else { continue }
            highest[String(parts[0])] = max(highest[String(parts[0])] ?? 0, version)
        }
        return highest
    }

    /// `StoreCrashWriter` sits in the build directory next to the test bundle.
    static func crashWriterPath() -> String? {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let candidate = testBinary.deletingLastPathComponent().appendingPathComponent("StoreCrashWriter").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }

    /// The same bytes as `crashPayload` in `Sources/StoreCrashWriter`.
    static func payload(scope: String, version: Int64) -> [UInt8] {
        let header = Array("\(scope):\(version):".utf8)
        return header + (0..<(1024 - header.count)).map { UInt8(truncatingIfNeeded: Int64($0) &+ version) }
    }
}
