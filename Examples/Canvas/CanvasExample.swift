import CanvasModel
import Foundation
import Jetstream
import JetstreamClient

/// Two peers in one process edit one canvas through `jetstream serve`, and print what their
/// observers see: `swift run CanvasExample [URL [SCOPE]]` — the gateway (default
/// `http://127.0.0.1:8080`) and a scope name the demo schema admits (default: a fresh
/// `canvas-example-…`, so runs never meet; a test names it to read the result back).
@main
struct CanvasExample {
    @MainActor
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        let url = URL(string: arguments.first ?? "http://127.0.0.1:8080")!
        let name = arguments.dropFirst().first ?? "canvas-example-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try await run(Client(url: url), scope: name)
        } catch {
            // One line and a failing status (an error thrown out of main would crash with a backtrace).
            FileHandle.standardError.write(Data("CanvasExample: \(error)\n".utf8))
            exit(1)
        }
    }

    @MainActor
    static func run(_ client: Client, scope name: String) async throws {

        // Ada creates the canvas with one shape; Bob opens the same scope.
        let adaCanvas = Canvas()
        adaCanvas.name = "Sketch"
        adaCanvas.shapes.append(Shape())
        let ada = Scope(name: name, root: adaCanvas)
        let adaSync = try await client.fetch(ada, createIfMissing: true)

        let bobCanvas = Canvas()
        let bob = Scope(name: name, root: bobCanvas)
        let bobSync = try await client.fetch(bob)
        print("bob fetched \(name): '\(bobCanvas.name ?? "")' with \(bobCanvas.shapes.count) shape(s)")

        // Bob's observers fire for Ada's edits, once per change set.
        bobCanvas.observeCollectionAdd(bobCanvas, key: \.shapes) { shape in
            print("bob sees a new \(shape.kind) '\(shape.label)' at (\(shape.x), \(shape.y))")
        }
        bobCanvas.observeCollectionRemove(bobCanvas, key: \.shapes) { shape in
            print("bob sees '\(shape.label)' removed")
        }
        adaSync.onRejected { rejection in print("ada's change was refused: \(rejection.reasons)") }

        // Ada's local changes show at once and go to the server as change sets.
        let oval = Shape()
        oval.kind = .oval
        oval.label = "hello"
        oval.x = 40
        adaCanvas.shapes.append(oval)
        try await waitUntil { bobCanvas.shapes.count == 2 }

        oval.observeChange(oval, keys: [\.x, \.y]) { print("ada sees the oval move to (\(oval.x), \(oval.y))") }
        let bobsOval = bobCanvas.shapes[1]
        bobsOval.x = 120  // Bob moves it; Ada's observer fires when the change set arrives
        bobsOval.y = 80
        try await waitUntil { oval.x == 120 && oval.y == 80 }

        // A change the schema refuses is undone at once and reported.
        oval.width = -5
        try await waitUntil { oval.width == 100 }

        bobCanvas.shapes.removeAll { $0.label == "hello" }
        // Ada may see Bob's removal before Bob's own answer confirms it: wait for both.
        try await waitUntil { adaCanvas.shapes.count == 1 && bobSync.pendingCount == 0 }
        print("both at version \(adaSync.version) / \(bobSync.version); ada pending \(adaSync.pendingCount)")
        await adaSync.stop()
        await bobSync.stop()
    }

    /// Polls `condition` on the main actor for up to 10 s.
    @MainActor
    static func waitUntil(_ condition: () -> Bool, line: Int = #line) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut(line: line) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        let line: Int
        var description: String { "what CanvasExample.swift:\(line) waits for did not happen within 10 s" }
    }
}
