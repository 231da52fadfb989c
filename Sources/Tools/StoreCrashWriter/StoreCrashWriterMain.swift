import Dispatch
import Foundation
import Store

/// Appends to the store at `path` from several writers (one scope each, `crash-0` …), printing
/// `scope version` on stdout, flushed, after each acknowledged append — the crash-safety test kills it
/// with SIGKILL mid-run and checks that every printed version survived.
///
/// Usage: `StoreCrashWriter PATH [WRITERS] [APPENDS-PER-WRITER]`
@main
enum StoreCrashWriterMain {
    static func main() async {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: StoreCrashWriter PATH [WRITERS] [APPENDS-PER-WRITER]\n".utf8))
            exit(2)
        }
        let writers = arguments.count > 2 ? Int(arguments[2]) ?? 4 : 4
        let appends = arguments.count > 3 ? Int64(arguments[3]) ?? Int64.max : Int64.max
        do {
            let store = try SQLiteStore(path: arguments[1])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<writers {
                    let name = "crash-\(index)"
                    var version = try store.scope(named: name)?.version
                    if version == nil {
                        version = try await store.createScope(
                            ScopeDescriptor(name: name, rootClass: "Root", rootUUID: "uuid-\(index)"), snapshot: [])
                    }
                    let start = version ?? 0
                    group.addTask {
                        var next = start + 1
                        while next - start <= appends {
                            try await store.append(
                                AppendRequest(
                                    scope: name, version: next, payload: crashPayload(scope: name, version: next)))
                            writeLine("\(name) \(next)\n")
                            next += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
            store.close()
        } catch {
            FileHandle.standardError.write(Data("StoreCrashWriter: \(error)\n".utf8))
            exit(1)
        }
    }

    /// One `write(2)` per line: shorter than PIPE_BUF, so lines from different writers never interleave.
    static func writeLine(_ line: String) {
        var line = line
        line.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
    }
}

/// The payload for a version: 1 KiB that names its scope and version, so a torn or misplaced record shows.
/// `Tests/StoreTests/CrashSafetyTests.swift` computes the same bytes.
func crashPayload(scope: String, version: Int64) -> [UInt8] {
    let header = Array("\(scope):\(version):".utf8)
    return header + (0..<(1024 - header.count)).map { UInt8(truncatingIfNeeded: Int64($0) &+ version) }
}
