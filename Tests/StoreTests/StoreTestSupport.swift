import CSQLite
import Dispatch
import Foundation
import Store
import Synchronization
import Testing

/// A fresh directory under the system temp directory, removed after `body`.
func withTemporaryDirectory<Value>(_ body: (String) async throws -> Value) async throws -> Value {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory.path)
}

/// Opens a SQLite store in a fresh directory, runs `body` with it and its path, closes the store: for
/// the tests of SQLite's own behaviour (the contract tests use ``withStore(_:settings:_:)``).
func withSQLiteStore<Value>(
    configuration: SQLiteStore.Configuration = SQLiteStore.Configuration(),
    _ body: (SQLiteStore, String) async throws -> Value
) async throws -> Value {
    try await withTemporaryDirectory { directory in
        let path = directory + "/store.sqlite"
        let store = try SQLiteStore(path: path, configuration: configuration)
        defer { store.close() }
        return try await body(store, path)
    }
}

func descriptor(_ name: String) -> ScopeDescriptor {
    ScopeDescriptor(name: name, rootClass: "Canvas", rootUUID: "root-of-\(name)")
}

func payload(_ scope: String, _ version: Int64) -> [UInt8] {
    Array("{\"scope\":\"\(scope)\",\"version\":\(version)}".utf8)
}

/// Appends versions `from...to` to a scope, one after another.
func appendVersions(_ store: any ChangeLogStore, _ scope: String, _ versions: ClosedRange<Int64>) async throws {
    for version in versions {
        try await store.append(AppendRequest(scope: scope, version: version, payload: payload(scope, version)))
    }
}

/// Runs SQL on the database file with a connection of the test's own, to damage it on purpose.
func executeRawSQL(_ sql: String, path: String) throws {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw StoreError.openFailed(path: path, message: "test") }
    defer { sqlite3_close(db) }
    let rc = sqlite3_exec(db, sql, nil, nil, nil)
    guard rc == SQLITE_OK else {
        throw StoreError.sqlite(operation: sql, code: rc, message: String(cString: sqlite3_errmsg(db)))
    }
}

/// Polls `condition` every millisecond for up to `seconds`; true once it holds.
func waitUntil(seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// Like ``waitUntil(seconds:_:)`` but sleeping the task, not the thread: for async tests, whose
/// store answers on threads of its own.
func eventually(seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// Runs `body` on `count` threads of their own at once and returns when all have finished.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            body(index)
            group.leave()
        }.start()
    }
    group.wait()
}
