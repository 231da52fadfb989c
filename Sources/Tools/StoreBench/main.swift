import Dispatch
import Foundation
import Store
import Synchronization

// Durable-append throughput and latency of SQLiteStore with 1, 8 and 32 concurrent writers (each on its
// own scope, then all on one scope with versions pipelined like the gateway's ScopeEngine), then the time
// to reopen and recover a store holding many logged change sets.
//
// Usage: swift run -c release StoreBench [--seconds S] [--records N] [--dir PATH]

let options = Options(CommandLine.arguments)
let recordSize = 1024

func payload(_ version: Int64) -> [UInt8] {
    (0..<recordSize).map { UInt8(truncatingIfNeeded: Int64($0) &* 31 &+ version) }
}

func freshPath(_ label: String) -> String {
    let directory = options.directory + "/store-bench-\(label)-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory + "/store.sqlite"
}

func removeStore(_ path: String) {
    try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
}

func percentile(_ sorted: [UInt64], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) / 1_000_000
}

func appendBenchmark(writers: Int, sharedScope: Bool) throws {
    let path = freshPath("append")
    defer { removeStore(path) }
    let store = try SQLiteStore(path: path)
    defer { store.close() }
    let scopes = sharedScope ? ["shared"] : (0..<writers).map { "w\($0)" }
    let created = DispatchSemaphore(value: 0)
    Task {
        for scope in scopes {
            _ = try await store.createScope(
                ScopeDescriptor(name: scope, rootClass: "Root", rootUUID: scope), snapshot: [])
        }
        created.signal()
    }
    created.wait()
    let sequencer = Sequencer()
    let latencies = Mutex<[UInt64]>([])
    let failures = Mutex(0)
    let before = store.statistics
    let start = DispatchTime.now().uptimeNanoseconds
    let deadline = start + UInt64(options.seconds * 1e9)
    let group = DispatchGroup()
    for index in 0..<writers {
        group.enter()
        Thread {
            let scope = sharedScope ? "shared" : "w\(index)"
            var mine: [UInt64] = []
            let done = DispatchSemaphore(value: 0)
            while DispatchTime.now().uptimeNanoseconds < deadline {
                let submitted = DispatchTime.now().uptimeNanoseconds
                sequencer.append(store, scope: scope) { result in
                    if case .failure = result { failures.withLock { $0 += 1 } }
                    done.signal()
                }
                done.wait()
                mine.append(DispatchTime.now().uptimeNanoseconds - submitted)
            }
            latencies.withLock { $0 += mine }
            group.leave()
        }.start()
    }
    group.wait()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let sorted = latencies.withLock { $0 }.sorted()
    let after = store.statistics
    let transactions = after.committedTransactions - before.committedTransactions
    let rate = Double(sorted.count) / elapsed
    let perCommit = Double(sorted.count) / Double(max(1, transactions))
    print(
        "| \(writers) | \(sharedScope ? "one scope" : "own scope") | \(Int(rate)) | "
            + String(format: "%.2f | %.2f | %.1f |", percentile(sorted, 0.5), percentile(sorted, 0.99), perCommit)
            + (failures.withLock { $0 } > 0 ? " \(failures.withLock { $0 }) failed" : ""))
}

func recoveryBenchmark(records: Int) throws {
    let scopes = 100
    let perScope = records / scopes
    let path = freshPath("recovery")
    defer { removeStore(path) }
    var configuration = SQLiteStore.Configuration()
    configuration.retainedChangeSets = perScope
    do {
        let store = try SQLiteStore(path: path, configuration: configuration)
        defer { store.close() }
        let created = DispatchSemaphore(value: 0)
        Task {
            for index in 0..<scopes {
                _ = try await store.createScope(
                    ScopeDescriptor(name: "scope-\(index)", rootClass: "Root", rootUUID: "\(index)"),
                    snapshot: payload(0))
            }
            created.signal()
        }
        created.wait()
        let fillStart = DispatchTime.now().uptimeNanoseconds
        let inFlight = DispatchSemaphore(value: 8192)
        let finished = DispatchGroup()
        for version in 1...Int64(perScope) {
            for index in 0..<scopes {
                inFlight.wait()
                finished.enter()
                store.append(AppendRequest(scope: "scope-\(index)", version: version, payload: payload(version))) {
                    if case .failure(let error) = $0 { fatalError("fill failed: \(error)") }
                    inFlight.signal()
                    finished.leave()
                }
            }
        }
        finished.wait()
        let fill = Double(DispatchTime.now().uptimeNanoseconds - fillStart) / 1e9
        print("filled \(perScope * scopes) change sets (\(scopes) scopes) in \(String(format: "%.1f", fill)) s")
    }
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    let openStart = DispatchTime.now().uptimeNanoseconds
    let store = try SQLiteStore(path: path, configuration: configuration)
    defer { store.close() }
    let opened = DispatchTime.now().uptimeNanoseconds
    var recoveredScopes = 0
    var recoveredRecords = 0
    var bytes = 0
    try store.recover { scope in
        recoveredScopes += 1
        recoveredRecords += scope.tail.count
        bytes += scope.snapshot.count + scope.tail.reduce(0) { $0 + $1.payload.count }
    }
    let done = DispatchTime.now().uptimeNanoseconds
    print(
        "recovery of \(recoveredRecords) change sets in \(recoveredScopes) scopes (\(bytes >> 20) MiB payload, "
            + "database \(size >> 20) MiB): open \(String(format: "%.3f", Double(opened - openStart) / 1e9)) s, "
            + "recover \(String(format: "%.2f", Double(done - opened) / 1e9)) s "
            + "(\(Int(Double(recoveredRecords) / (Double(done - opened) / 1e9))) change sets/s)")
}

print(
    "StoreBench: \(recordSize)-byte records, synchronous=FULL (every commit fsyncs the WAL), \(options.seconds) s per row"
)
print("| writers | scopes | appends/s | p50 ms | p99 ms | appends per commit |")
print("|---|---|---|---|---|---|")
for writers in [1, 8, 32] {
    for shared in [false, true] where !(writers == 1 && shared) {
        try appendBenchmark(writers: writers, sharedScope: shared)
    }
}
try recoveryBenchmark(records: options.records)

/// Command-line options of StoreBench.
struct Options {
    var seconds = 5.0
    var records = 1_000_000
    var directory = FileManager.default.temporaryDirectory.path

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--seconds": seconds = Double(value) ?? seconds
            case "--records": records = Int(value) ?? records
            case "--dir": directory = value
            default:
                print("unknown option \(flag); usage: StoreBench [--seconds S] [--records N] [--dir PATH]")
                exit(2)
            }
        }
    }
}

/// Versions handed out and enqueued under one lock per scope, so pipelined appends reach the store in order.
final class Sequencer: Sendable {
    let versions = Mutex<[String: Int64]>([:])

    func append(_ store: SQLiteStore, scope: String, done: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        versions.withLock { versions in
            let version = (versions[scope] ?? 0) + 1
            versions[scope] = version
            store.append(AppendRequest(scope: scope, version: version, payload: payload(version)), completion: done)
        }
    }
}
