import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import JetstreamModel
import Testing

/// `sync.call` against the real gateway's demo method `arrange` (docs/methods.md): a stub's edits
/// show at once and are replaced by the server's change set; a refusal rolls them back and reaches
/// `onRejected`; a call that changes nothing leaves no trace; calls keep their place among local
/// changes.
@Suite("Server methods from the Swift client: call with a stub", .serialized)
@MainActor
struct MethodCallLiveTests {
    static func shape(_ label: String, x: Float = 3) -> Shape {
        let shape = Shape()
        shape.label = label
        shape.x = x
        return shape
    }

    /// The grid `arrange` makes with `columns` for shapes of the default size (cells of 120).
    static func grid(_ count: Int, columns: Int) -> [Float] {
        (0..<count).map { Float(20 + ($0 % columns) * 120) }
    }

    @Test(
        "a stub's edits show at once, then the server's change set replaces them; another client sees only the server's"
    )
    func stubThenServer() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a", "b", "c"])
            let transport = FaultyTransport()
            let ada = try await live.peer(transport: transport)
            let bob = try await live.peer()
            var bobSaw: Set<Float> = []
            for shape in bob.canvas.shapes {
                shape.observeChange(shape, keys: ["x"]) { bobSaw.insert(shape.x) }
            }
            transport.holdPosts()
            let call = Task { @MainActor in
                try await ada.sync.call("arrange", args: ["columns": 2]) { _ in
                    for shape in ada.canvas.shapes { shape.x = 999 }
                }
            }
            try await Poll.until("the stub shows while the POST is held") {
                transport.heldPostCount == 1 && ada.canvas.shapes.allSatisfy { $0.x == 999 }
            }
            #expect(ada.sync.pendingCount == 1, "the stub's edits are the call's one pending entry")
            transport.releasePosts()
            let answer = try await call.value
            #expect(answer.method == "arrange" && answer.changed && answer.version == 2)
            #expect(answer.result == ["moved": 3, "columns": 2])
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.canvas.shapes.map(\.x) == Self.grid(3, columns: 2))
            #expect(!bobSaw.contains(999), "the other client never saw the stub: \(bobSaw)")
            let sets = try await live.api.changeSets(of: live.scopeName)
            #expect(sets.last?["method"]?.string == "arrange" && sets.count == 2)
            #expect(ada.rejections.isEmpty)
        }
    }

    @Test("a refusal rolls the stub back, reaches onRejected with its type, and the call throws")
    func refusalRollsBack() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a", "b"])
            let ada = try await live.peer()
            let before = ada.canvas.shapes.map(\.x)
            do {
                try await ada.sync.call("arrange", args: ["columns": 0]) { _ in
                    ada.canvas.shapes[0].x = 777
                }
                Issue.record("the refused call returned")
            } catch {
                guard case ClientError.refused(let status, let detail) = error else { throw error }
                #expect(status == 422 && detail.contains("columns must be an integer"), "\(detail)")
            }
            #expect(ada.canvas.shapes.map(\.x) == before, "the stub's edit rolled back")
            #expect(ada.rejections.count == 1)
            #expect(ada.rejections.first?.problemType == "/problems/method-rejected")
            #expect(ada.sync.pendingCount == 0)
            do {
                try await ada.sync.call("no-such-method")
                Issue.record("an unknown method returned")
            } catch {
                guard case ClientError.refused(404, _) = error else { throw error }
            }
            #expect(try await live.api.changeSets(of: live.scopeName).count == 1, "nothing applied")
        }
    }

    @Test("a call that changes nothing removes its stub's edits and makes no version")
    func nothingChanged() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer()
            _ = try await ada.sync.call("arrange", args: ["columns": 1])
            try await live.waitUntilConverged([ada])
            let version = ada.sync.version
            let again = try await ada.sync.call("arrange", args: ["columns": 1]) { _ in
                ada.canvas.shapes[0].y = 555
            }
            #expect(!again.changed && again.version == version && again.result == ["moved": 0, "columns": 1])
            #expect(ada.canvas.shapes[0].y == 20, "the stub's edit left with the answer")
            #expect(ada.sync.pendingCount == 0)
        }
    }

    @Test("a call keeps its place: local changes made before it go first, those after it after")
    func orderAmongLocalChanges() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let transport = FaultyTransport()
            let ada = try await live.peer(transport: transport)
            transport.holdPosts()
            ada.canvas.shapes.append(Self.shape("before"))
            let call = Task { @MainActor in try await ada.sync.call("arrange", args: ["columns": 3]) }
            try await Poll.until("the call is queued behind the add") { ada.sync.pendingCount == 2 }
            ada.canvas.shapes.append(Self.shape("after", x: 1234))
            try await Poll.until("the later add is queued behind the call") { ada.sync.pendingCount == 3 }
            transport.releasePosts()
            let answer = try await call.value
            try await live.waitUntilConverged([ada])
            let sets = try await live.api.changeSets(of: live.scopeName)
            #expect(sets.compactMap { $0["method"]?.string } == ["arrange"])
            #expect(answer.version == 3 && sets.count == 4, "the seed, the add before, the call, the add after")
            #expect(ada.canvas.shapes.map(\.label) == ["a", "before", "after"])
            #expect(ada.canvas.shapes.map(\.x) == [20, 140, 1234], "arranged the two before, not the one after")
        }
    }
}
