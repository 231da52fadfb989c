import CanvasModel
import Foundation
import Jetstream
import JetstreamClient

/// A canvas kept on disk between runs (docs/offline.md): each run opens the stored copy — at once,
/// even with the server down — adds a shape, waits until it is `saved()`, and says whether the
/// server has confirmed it yet. Run it with the server stopped, a few times, then with the server
/// up: every shape arrives once.
///
///     swift run OfflineExample [--storage DIR] [URL [SCOPE]]
///
/// `--writer COUNT` makes it add shapes until the canvas has COUNT of them, printing `saved LABEL`
/// after each `saved()`, then wait until the server has confirmed them all (the crash test kills it
/// at random points of that).
@main
struct OfflineExample {
    @MainActor
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let storage =
            option("--storage", in: &arguments).map { URL(filePath: $0) }
            ?? FileManager.default.temporaryDirectory.appending(path: "jetstream-offline-example")
        let writerCount = option("--writer", in: &arguments).flatMap { Int($0) }
        let url = URL(string: arguments.first ?? "http://127.0.0.1:8080")!
        let name = arguments.dropFirst().first ?? "canvas-offline-example"
        var configuration = Client.Configuration()
        configuration.backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        let client = Client(url: url, storage: .directory(storage), configuration: configuration)
        do {
            if let writerCount {
                try await write(client, scope: name, until: writerCount)
            } else {
                try await tour(client, scope: name, storage: storage)
            }
        } catch {
            FileHandle.standardError.write(Data("OfflineExample: \(error)\n".utf8))
            exit(1)
        }
    }

    @MainActor
    static func tour(_ client: Client, scope name: String, storage: URL) async throws {
        let canvas = Canvas()
        let sync = try await client.fetch(Scope(name: name, root: canvas), createIfMissing: true)
        for problem in sync.storageProblems { print("storage: \(problem)") }
        print("opened \(name): \(canvas.shapes.count) shape(s), \(sync.pendingCount) pending, \(describe(sync.status))")

        let shape = Shape()
        shape.label = "shape \(canvas.shapes.count + 1)"
        shape.x = Float(canvas.shapes.count * 20)
        canvas.shapes.append(shape)
        try await sync.saved()
        print("saved '\(shape.label)' (\(sync.pendingCount) pending)")

        if await waitUntilConfirmed(sync, within: .seconds(5)) {
            print("the server has all \(canvas.shapes.count) shape(s) at version \(sync.version)")
        } else {
            print(
                "still offline: \(sync.pendingCount) change set(s) kept in \(storage.path); run again with the server up"
            )
        }
        await sync.stop()
    }

    /// Adds shapes `w-<run>-<n>` until the canvas has `count` of them, each `saved()` before the
    /// next; then waits (at most a minute) until the server has confirmed them.
    @MainActor
    static func write(_ client: Client, scope name: String, until count: Int) async throws {
        let canvas = Canvas()
        let sync = try await client.fetch(Scope(name: name, root: canvas), createIfMissing: true)
        for problem in sync.storageProblems { FileHandle.standardOutput.write(Data("storage: \(problem)\n".utf8)) }
        let run = UInt32.random(in: 0...UInt32.max)
        var made = 0
        while canvas.shapes.count < count {
            let shape = Shape()
            shape.label = "w-\(run)-\(made)"
            canvas.shapes.append(shape)
            made += 1
            try await sync.saved()
            // Unbuffered: a line printed is a change saved, whenever the process is killed.
            FileHandle.standardOutput.write(Data("saved \(shape.label)\n".utf8))
        }
        guard await waitUntilConfirmed(sync, within: .seconds(60)) else {
            throw ClientError.unreachable("\(sync.pendingCount) set(s) still pending after a minute")
        }
        FileHandle.standardOutput.write(
            Data("done at version \(sync.version) with \(canvas.shapes.count) shapes\n".utf8))
        await sync.stop()
    }

    @MainActor
    static func waitUntilConfirmed(_ sync: ScopeSync, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if sync.status == .live && sync.pendingCount == 0 { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    static func describe(_ status: ScopeSync.Status) -> String {
        switch status {
        case .connecting: "connecting"
        case .live: "live"
        case .reconnecting: "offline (reconnecting)"
        case .suspended: "suspended"
        case .stopped(let reason): "stopped (\(reason))"
        }
    }

    /// Removes `--name VALUE` from `arguments` and returns VALUE.
    static func option(_ name: String, in arguments: inout [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        let value = arguments[index + 1]
        arguments.removeSubrange(index...(index + 1))
        return value
    }
}
