import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import Observation
import Synchronization
import Testing

/// Swift's Observation framework (what SwiftUI tracks) on a client's objects, with the change made
/// by another client through the real gateway.
@Suite("Observation framework through the gateway")
@MainActor
struct ObservationLiveTests {
    @Test("another client's writes notify withObservationTracking on what was read, and only that")
    func remoteWritesNotifyTheTrackedReads() async throws {
        try await LiveHarness.run { live in
            let ada = try await live.peer(createIfMissing: true)
            let adasShape = Shape()
            adasShape.label = "one"
            ada.canvas.shapes.append(adasShape)
            let bob = try await live.peer()
            try await Poll.until("bob has ada's shape (bob: \(bob.summary))") {
                bob.sync.status == .live && bob.canvas.shapes.first?.label == "one"
            }
            let bobsShape = try #require(bob.canvas.shapes.first)

            let name = TrackedReads { _ = bob.canvas.name }
            let label = TrackedReads { _ = bob.canvas.shapes.first?.label }
            let shapes = TrackedReads { _ = bob.canvas.shapes.count }
            let position = TrackedReads { _ = bobsShape.x }

            ada.canvas.name = "renamed by ada"
            adasShape.label = "relabelled by ada"
            ada.canvas.shapes.append(Shape())
            try await Poll.until(
                "bob's trackings are told (name \(name.count), label \(label.count), shapes \(shapes.count); "
                    + "bob: \(bob.summary))"
            ) { name.count == 1 && label.count == 1 && shapes.count == 1 }
            try await live.waitUntilConverged([ada, bob])
            #expect(bob.canvas.name == "renamed by ada" && bobsShape.label == "relabelled by ada")
            #expect(position.count == 0, "x was read, but nobody changed it")
        }
    }
}

/// Counts the change notifications of one `withObservationTracking` over `read`.
private final class TrackedReads: Sendable {
    private let fired = Mutex(0)

    var count: Int { fired.withLock { $0 } }

    init(_ read: () -> Void) {
        withObservationTracking(read) { [self] in fired.withLock { $0 += 1 } }
    }
}
